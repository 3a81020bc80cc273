/**
 * The frame of a tenant's console pages (issue 9): the page layout with the tenant's tabs
 * (overview, users, API keys, backups), the current one marked for screen readers, and the
 * console's script (copy buttons, live restore status).
 * @module
 */
import type { Flash } from '../shared/flash.js'
import { html, type Html } from '../shared/html.js'
import { page } from '../shared/layout.js'
import { signOutForm } from '../shared/portal-page.js'
import type { ConsoleVisit } from './access.js'

export type ConsoleTab = 'overview' | 'users' | 'keys' | 'backups'

const tabs: readonly { readonly tab: ConsoleTab; readonly label: string; readonly path: string }[] = [
  { tab: 'overview', label: 'Overview', path: '' },
  { tab: 'users', label: 'Users', path: '/users' },
  { tab: 'keys', label: 'API keys', path: '/keys' },
  { tab: 'backups', label: 'Backups', path: '/backups' },
]

export function consolePage(
  visit: ConsoleVisit,
  current: ConsoleTab,
  title: string,
  body: Html,
  flash: Flash | null,
): string {
  const nav = html`<nav class="tabs" aria-label="Tenant ${visit.slug}"><span class="tenant">${visit.slug}</span><ul>${tabs.map(
    (entry) =>
      html`<li><a href="/console/${visit.slug}${entry.path}"${entry.tab === current ? html` aria-current="page"` : null}>${entry.label}</a></li>`,
  )}</ul></nav>`
  return page({
    title,
    person: visit.email,
    flash,
    body,
    nav,
    signOut: signOutForm(visit.csrf),
    scripts: ['console.js'],
  })
}
