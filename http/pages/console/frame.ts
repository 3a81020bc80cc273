/**
 * The frame of a tenant's console pages (issue 9): the page layout with the tenant's tabs
 * (overview, users, API keys, backups, and for roles that read prices "why this price", "what
 * changes", "corrections" and "changelog"), the current one marked for screen readers, and the
 * console's script (copy buttons, live restore status).
 * @module
 */
import { can, type Permission } from '../../../accounts/people/roles.js'
import type { Flash } from '../shared/flash.js'
import { html, type Html } from '../shared/html.js'
import { page } from '../shared/layout.js'
import { signOutForm } from '../shared/portal-page.js'
import type { ConsoleVisit } from './access.js'

export type ConsoleTab = 'overview' | 'users' | 'keys' | 'backups' | 'why' | 'changes' | 'corrections' | 'changelog'

interface Tab {
  readonly tab: ConsoleTab
  readonly label: string
  readonly path: string
  /** Shown only to roles with this permission (the page refuses the others). */
  readonly permission?: Permission
}

const tabs: readonly Tab[] = [
  { tab: 'overview', label: 'Overview', path: '' },
  { tab: 'users', label: 'Users', path: '/users' },
  { tab: 'keys', label: 'API keys', path: '/keys' },
  { tab: 'backups', label: 'Backups', path: '/backups' },
  { tab: 'why', label: 'Why this price', path: '/why', permission: 'prices.read' },
  { tab: 'changes', label: 'What changes', path: '/changes', permission: 'prices.read' },
  // Every role that reads prices sees the marks; the page shows its forms to `prices.correct` only.
  { tab: 'corrections', label: 'Corrections', path: '/corrections', permission: 'prices.read' },
  // The log of every change, prices' effective changes among them: read by every role, as prices are.
  { tab: 'changelog', label: 'Changelog', path: '/changelog', permission: 'prices.read' },
]

export function consolePage(
  visit: ConsoleVisit,
  current: ConsoleTab,
  title: string,
  body: Html,
  flash: Flash | null,
): string {
  const shown = tabs.filter((entry) => entry.permission === undefined || can(visit.role, entry.permission))
  const nav = html`<nav class="tabs" aria-label="Tenant ${visit.slug}"><span class="tenant">${visit.slug}</span><ul>${shown.map(
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
