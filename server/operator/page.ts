/**
 * The operators' page (issue 9), `/operator`: people's tenant requests waiting for a decision, each
 * with an approve button and a reject form (a reason the requester sees), the requests already
 * decided, and the tenants with their status.
 * @module
 */
import type { SystemStore, TenantRequestRecord } from '../../storage/system-store.js'
import { listTenantRequests } from '../portal/tenant-requests.js'
import { csrfField } from '../web/csrf.js'
import type { Flash } from '../web/flash.js'
import { html, type Html } from '../web/html.js'
import { page } from '../web/layout.js'
import { signOutForm } from '../web/portal-page.js'

export interface OperatorView {
  readonly person: string
  readonly csrf: string
  readonly flash: Flash | null
  readonly system: SystemStore
}

const when = (ms: number): string => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`

function pending(view: OperatorView, request: TenantRequestRecord, index: number): Html {
  const token = html`<input type="hidden" name="${csrfField}" value="${view.csrf}">`
  return html`<tr><td>${request.slug}</td><td>${request.tier}</td><td>${request.region}</td><td>${request.email}</td><td>${when(request.created_at)}</td><td>
<form class="inline" method="post" action="/operator/tenant-requests/${request.id}/approve">${token}<button type="submit">Approve<span class="visually-hidden"> ${request.slug}</span></button></form>
<form class="inline" method="post" action="/operator/tenant-requests/${request.id}/reject">${token}<label class="visually-hidden" for="reason-${index}">Reason to reject ${request.slug}</label><input id="reason-${index}" name="reason" maxlength="500" placeholder="reason (optional)"><button type="submit" class="danger">Reject<span class="visually-hidden"> ${request.slug}</span></button></form>
</td></tr>`
}

export function operatorPage(view: OperatorView): string {
  const requests = listTenantRequests(view.system)
  const open = requests.filter((request) => request.status === 'requested')
  const decided = requests.filter((request) => request.status !== 'requested')
  const tenants = view.system.listTenants()
  const body = html`<h2>Waiting for a decision</h2>
${open.length === 0 ? html`<p>No requests wait.</p>` : html`<div class="table-scroll" role="region" aria-label="Requests waiting" tabindex="0"><table class="data"><thead><tr><th scope="col">Slug</th><th scope="col">Tier</th><th scope="col">Region</th><th scope="col">Requested by</th><th scope="col">When</th><th scope="col">Decision</th></tr></thead><tbody>
${open.map((request, index) => pending(view, request, index))}
</tbody></table></div>`}
<h2>Decided</h2>
${decided.length === 0 ? html`<p>None yet.</p>` : html`<div class="table-scroll" role="region" aria-label="Requests decided" tabindex="0"><table class="data"><thead><tr><th scope="col">Slug</th><th scope="col">Requested by</th><th scope="col">Status</th><th scope="col">Decided</th></tr></thead><tbody>
${decided.map((request) => html`<tr><td>${request.slug}</td><td>${request.email}</td><td class="status-${request.status}">${request.status}${request.reason === null ? null : html`: ${request.reason}`}</td><td>${request.decided_at === null ? '' : when(request.decided_at)}</td></tr>`)}
</tbody></table></div>`}
<h2>Tenants</h2>
<div class="table-scroll" role="region" aria-label="Tenants" tabindex="0"><table class="data"><thead><tr><th scope="col">Slug</th><th scope="col">Tier</th><th scope="col">Region</th><th scope="col">Status</th><th scope="col">Owner</th></tr></thead><tbody>
${tenants.map((tenant) => html`<tr><td>${tenant.slug}</td><td>${tenant.tier}</td><td>${tenant.region}</td><td class="status-${tenant.status}">${tenant.status}</td><td>${tenant.owner_email ?? ''}</td></tr>`)}
</tbody></table></div>`
  return page({ title: 'Operator: tenant requests', person: view.person, flash: view.flash, body, signOut: signOutForm(view.csrf) })
}
