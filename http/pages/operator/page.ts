/**
 * The operators' page (issue 9), `/operator`: people's tenant requests waiting for a decision, each
 * with an approve button and a reject form (a reason the requester sees), the requests already
 * decided, and the tenants with their status.
 * @module
 */
import type { SystemStore, TenantRequestRecord } from '../../../storage/system-store.js'
import { listTenantRequests } from '../../../accounts/tenant-requests.js'
import { csrfField } from '../shared/csrf.js'
import type { Flash } from '../shared/flash.js'
import { html } from '../shared/html.js'
import { page } from '../shared/layout.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import { signOutForm } from '../shared/portal-page.js'

export interface OperatorView {
  readonly person: string
  readonly csrf: string
  readonly flash: Flash | null
  readonly system: SystemStore
}

const when = (ms: number): string => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`

const pendingColumns: readonly Column[] = [
  { title: 'Slug' },
  { title: 'Tier' },
  { title: 'Region' },
  { title: 'Requested by' },
  { title: 'When' },
  { title: 'Decision', hiddenTitle: true },
]
const decidedColumns: readonly Column[] = [
  { title: 'Slug' },
  { title: 'Requested by' },
  { title: 'Status' },
  { title: 'Decided' },
]
const tenantColumns: readonly Column[] = [
  { title: 'Slug' },
  { title: 'Tier' },
  { title: 'Region' },
  { title: 'Status' },
  { title: 'Owner' },
]

function pending(view: OperatorView, request: TenantRequestRecord, index: number): Cell[] {
  const token = html`<input type="hidden" name="${csrfField}" value="${view.csrf}">`
  const decision = html`<div class="actions">
<form class="inline" method="post" action="/operator/tenant-requests/${request.id}/approve">${token}<button type="submit">Approve<span class="visually-hidden"> ${request.slug}</span></button></form>
<form class="inline" method="post" action="/operator/tenant-requests/${request.id}/reject">${token}<label class="visually-hidden" for="reason-${index}">Reason to reject ${request.slug}</label><input id="reason-${index}" name="reason" maxlength="500" placeholder="reason (optional)"><button type="submit" class="danger">Reject<span class="visually-hidden"> ${request.slug}</span></button></form>
</div>`
  return [request.slug, request.tier, request.region, request.email, when(request.created_at), decision]
}

export function operatorPage(view: OperatorView): string {
  const requests = listTenantRequests(view.system)
  const open = requests.filter((request) => request.status === 'requested')
  const decided = requests.filter((request) => request.status !== 'requested')
  const tenants = view.system.listTenants()
  const body = html`<h2>Waiting for a decision</h2>
${
  open.length === 0
    ? html`<p>No requests wait.</p>`
    : dataTable(
        'Requests waiting',
        pendingColumns,
        open.map((request, index) => pending(view, request, index)),
      )
}
<h2>Decided</h2>
${
  decided.length === 0
    ? html`<p>None yet.</p>`
    : dataTable(
        'Requests decided',
        decidedColumns,
        decided.map((request) => [
          request.slug,
          request.email,
          {
            content: html`${request.status}${request.reason === null ? null : html`: ${request.reason}`}`,
            className: `status-${request.status}`,
          },
          request.decided_at === null ? '' : when(request.decided_at),
        ]),
      )
}
<h2>Tenants</h2>
${dataTable(
  'Tenants',
  tenantColumns,
  tenants.map((tenant) => [
    tenant.slug,
    tenant.tier,
    tenant.region,
    { content: tenant.status, className: `status-${tenant.status}` },
    tenant.owner_email ?? '',
  ]),
  'No tenants yet.',
)}`
  return page({
    title: 'Operator: tenant requests',
    person: view.person,
    flash: view.flash,
    body,
    signOut: signOutForm(view.csrf),
  })
}
