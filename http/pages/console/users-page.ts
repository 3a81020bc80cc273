/**
 * A tenant's users in the console (issue 9): the list with each role, a form per user to change
 * it and a link to remove them (behind a confirmation page), and the invitation form. Forms a
 * person's role does not allow (accounts/people/roles.ts) are not shown; the server checks anyway.
 * @module
 */
import { can, roles } from '../../../accounts/people/roles.js'
import { csrfField } from '../shared/csrf.js'
import { html } from '../shared/html.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import type { MemberRecord } from '../../../storage/system-store.js'
import type { ConsoleVisit } from './access.js'
import type { Flash } from '../shared/flash.js'
import { consolePage } from './frame.js'

export const userPath = (visit: ConsoleVisit, email: string): string =>
  `/console/${visit.slug}/users/${encodeURIComponent(email)}`

function assignable(visit: ConsoleVisit): readonly string[] {
  return can(visit.role, 'owners.manage') ? roles : roles.filter((role) => role !== 'owner')
}

function mayManage(visit: ConsoleVisit, member: MemberRecord): boolean {
  return can(visit.role, member.role === 'owner' ? 'owners.manage' : 'users.manage')
}

const columns: readonly Column[] = [
  { title: 'User' },
  { title: 'Role' },
  { title: 'Added' },
  { title: 'Actions', hiddenTitle: true },
]

function row(visit: ConsoleVisit, member: MemberRecord, index: number): Cell[] {
  const manage = mayManage(visit, member)
  const role = manage
    ? html`<form class="inline" method="post" action="${userPath(visit, member.email)}/role">
<input type="hidden" name="${csrfField}" value="${visit.csrf}">
<label class="visually-hidden" for="role-${index}">Role of ${member.email}</label>
<select id="role-${index}" name="role">${assignable(visit).map((option) => html`<option value="${option}"${option === member.role ? html` selected` : null}>${option}</option>`)}</select>
<button type="submit">Change role</button>
</form>`
    : member.role
  const remove =
    manage && member.email !== visit.email
      ? html`<a href="${userPath(visit, member.email)}/remove">Remove<span class="visually-hidden"> ${member.email}</span></a>`
      : null
  const who = html`${member.email}${member.email === visit.email ? html` <span class="hint">(you)</span>` : null}`
  return [who, role, new Date(member.created_at).toISOString().slice(0, 10), remove]
}

export function usersPage(visit: ConsoleVisit, flash: Flash | null): string {
  const members = visit.tenant.system.listMembers(visit.slug)
  const invite = can(visit.role, 'users.manage')
    ? html`<h2>Invite a user</h2>
<form method="post" action="/console/${visit.slug}/users">
<input type="hidden" name="${csrfField}" value="${visit.csrf}">
<label for="invite-email">E-mail address</label>
<input id="invite-email" name="email" type="email" required maxlength="254" autocomplete="off">
<label for="invite-role">Role</label>
<select id="invite-role" name="role">${assignable(visit).map((option) => html`<option value="${option}"${option === 'editor' ? html` selected` : null}>${option}</option>`)}</select>
<p class="hint">They get a mail with a link that signs them in to this console (valid 15 minutes; after that they sign in at the portal).</p>
<button type="submit">Send the invitation</button>
</form>`
    : html`<p class="hint">Your role (${visit.role}) does not invite or change users.</p>`
  const body = html`${dataTable(
    'Users',
    columns,
    members.map((member, index) => row(visit, member, index)),
  )}
<p class="hint">Owners manage everything; admins manage users other than owners, keys and backups and restore; editors take backups; every role manages API keys (docs/api.md, Roles).</p>
${invite}`
  return consolePage(visit, 'users', `${visit.slug}: users`, body, flash)
}
