/**
 * The account portal's page (issue 9): signed out, a sign-in form; signed in, the person's tenants
 * with their status and console links, their tenant requests, and a form to request one (slug,
 * tier, region of this deployment). Forms post to the portal's endpoints, which answer a form post
 * with a redirect back here (http/pages/portal/routes.ts).
 * @module
 */
import type { SystemStore, TenantRequestRecord } from '../../../storage/system-store.js'
import { plans } from '../../../tenant/plans.js'
import { slugPattern } from '../../../tenant/runtime.js'
import { csrfField } from './csrf.js'
import type { Flash } from './flash.js'
import { html, type Html } from './html.js'
import { page } from './layout.js'
import { dataTable, type Column } from './table.js'

/** The slug rule for the field's `pattern`, which browsers compile with the `v` flag (a literal hyphen in a class escaped). */
const slugInputPattern = slugPattern.source.slice(1, -1).replaceAll('9-]', '9\\-]')

export interface PortalView {
  readonly person: string | null
  readonly csrf: string
  readonly flash: Flash | null
  readonly regions: readonly string[]
  readonly system: SystemStore
  readonly requests: readonly TenantRequestRecord[]
  /** The person is an operator (PRICING_OPERATOR_EMAILS): the page links to /operator. */
  readonly operator: boolean
}

function csrfInput(token: string): Html {
  return html`<input type="hidden" name="${csrfField}" value="${token}">`
}

export function signOutForm(csrf: string): Html {
  return html`<form class="inline" method="post" action="/portal/sign-out">${csrfInput(csrf)}<button type="submit">Sign out</button></form>`
}

function signInForm(): Html {
  return html`<form method="post" action="/portal/sign-in">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
<p class="hint">We mail you a link that signs you in; it works once, within 15 minutes.</p>
<button type="submit">Mail me a sign-in link</button>
</form>`
}

function tenantsTable(view: PortalView): Html {
  const rows = view.system.listTenants().filter((tenant) => view.system.member(tenant.slug, view.person!) !== undefined)
  if (rows.length === 0) return html`<p>You are not a user of any tenant yet.</p>`
  const columns: readonly Column[] = [
    { title: 'Tenant' },
    { title: 'Tier' },
    { title: 'Region' },
    { title: 'Status' },
    { title: 'Your role' },
  ]
  return dataTable(
    'Your tenants',
    columns,
    rows.map((tenant) => [
      html`<a href="/console/${tenant.slug}">${tenant.slug}</a>`,
      tenant.tier,
      tenant.region,
      { content: tenant.status, className: `status-${tenant.status}` },
      view.system.member(tenant.slug, view.person!)!.role,
    ]),
  )
}

function requestsTable(requests: readonly TenantRequestRecord[]): Html {
  if (requests.length === 0) return html`<p>No requests yet.</p>`
  const columns: readonly Column[] = [
    { title: 'Slug' },
    { title: 'Tier' },
    { title: 'Region' },
    { title: 'Status' },
    { title: 'Requested' },
  ]
  return dataTable(
    'Your requests',
    columns,
    requests.map((request) => [
      request.slug,
      request.tier,
      request.region,
      {
        content: html`${request.status}${request.reason === null ? null : html`: ${request.reason}`}`,
        className: `status-${request.status}`,
      },
      `${new Date(request.created_at).toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    ]),
  )
}

function requestForm(view: PortalView): Html {
  return html`<form method="post" action="/portal/tenant-requests">
${csrfInput(view.csrf)}
<label for="slug">Slug</label>
<input id="slug" name="slug" required maxlength="63" pattern="${slugInputPattern}" aria-describedby="slug-hint" autocomplete="off">
<p class="hint" id="slug-hint">Lowercase letters, digits and hyphens; no hyphen first or last. Your API lives at /t/&lt;slug&gt;.</p>
<p class="hint" id="slug-check" aria-live="polite"></p>
<label for="tier">Tier</label>
<select id="tier" name="tier">${Object.keys(plans).map((tier) => html`<option value="${tier}"${tier === 'standard' ? html` selected` : null}>${tier}</option>`)}</select>
<label for="region">Region (where the tenant's data is kept)</label>
<select id="region" name="region">${view.regions.map((region) => html`<option value="${region}">${region}</option>`)}</select>
<button type="submit">Request the tenant</button>
</form>`
}

export function portalPage(view: PortalView): string {
  if (view.person === null) return page({ title: 'Sign in', person: null, flash: view.flash, body: signInForm() })
  const body = html`${view.operator ? html`<p><a href="/operator">Operator: tenant requests to decide</a></p>` : null}
<h2>Your tenants</h2>
${tenantsTable(view)}
<h2>Your requests</h2>
${requestsTable(view.requests)}
<h2>Request a tenant</h2>
${requestForm(view)}`
  return page({
    title: 'Your account',
    person: view.person,
    flash: view.flash,
    body,
    signOut: signOutForm(view.csrf),
    scripts: ['portal.js'],
  })
}
