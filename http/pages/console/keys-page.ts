/**
 * A tenant's API keys in the console (issue 9): the list with last-used times, the form that creates
 * one, and on the page the creation redirects to, the only showing of its secret (a reload shows the
 * key and says the secret was shown once): client id and secret with copy buttons (console.js makes
 * them work; without script the values are selectable text) and the curl line that gets a token
 * with them. Revoking goes through a confirmation page.
 * @module
 */
import { withRecentUse } from '../../../accounts/provision.js'
import { csrfField } from '../shared/csrf.js'
import { html, type Html } from '../shared/html.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import type { ApiKeyRecord } from '../../../storage/system-store.js'
import type { ConsoleVisit } from './access.js'
import type { Flash } from '../shared/flash.js'
import { consolePage } from './frame.js'

export interface NewKey {
  readonly record: ApiKeyRecord
  /** Null once it has been shown (a reload of the page). */
  readonly clientSecret: string | null
  /** The service's public base URL, for the curl line. */
  readonly baseUrl: string
}

const when = (ms: number | null): string =>
  ms === null ? 'never' : `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`

function copyable(id: string, label: string, value: string): Html {
  return html`<div class="copyable">
<label for="${id}">${label}</label>
<input id="${id}" type="text" readonly value="${value}" class="mono" spellcheck="false">
<button type="button" class="copy" data-copy="${id}" hidden>Copy<span class="visually-hidden"> ${label}</span></button>
</div>`
}

function newKeyPanel(key: NewKey): Html {
  if (key.clientSecret === null) {
    return html`<section class="new-key" aria-labelledby="new-key-title">
<h2 id="new-key-title">Your new key "${key.record.name}"</h2>
<p role="status">Its secret was shown once, when the key was created, and is not kept (only its hash is).
If you did not copy it, revoke this key and create another.</p>
${copyable('new-client-id', 'Client id', key.record.client_id)}
</section>`
  }
  const curl = `curl -s -X POST ${key.baseUrl}/oauth2/token -d grant_type=client_credentials -d client_id=${key.record.client_id} -d client_secret=${key.clientSecret}`
  return html`<section class="new-key" aria-labelledby="new-key-title">
<h2 id="new-key-title">Your new key "${key.record.name}"</h2>
<p role="status"><strong>Copy the secret now: it is shown only this once.</strong> Only its hash is kept.</p>
${copyable('new-client-id', 'Client id', key.record.client_id)}
${copyable('new-client-secret', 'Client secret', key.clientSecret)}
${copyable('new-curl', 'Get a token (curl)', curl)}
</section>`
}

const columns: readonly Column[] = [
  { title: 'Name' },
  { title: 'Client id' },
  { title: 'Created' },
  { title: 'Last used' },
  { title: 'Status' },
  { title: 'Actions', hiddenTitle: true },
]

function row(visit: ConsoleVisit, key: ApiKeyRecord): Cell[] {
  const revoke =
    key.revoked_at === null
      ? html`<a href="/console/${visit.slug}/keys/${key.client_id}/revoke">Revoke<span class="visually-hidden"> ${key.name}</span></a>`
      : null
  const status = key.revoked_at === null ? 'active' : `revoked ${when(key.revoked_at)}`
  const clientId = { content: key.client_id, className: 'mono' }
  return [key.name, clientId, when(key.created_at), when(key.last_used_at), status, revoke]
}

export function keysPage(
  visit: ConsoleVisit,
  usage: ReadonlyMap<string, number>,
  flash: Flash | null,
  created: NewKey | null,
): string {
  const keys = visit.tenant.system.listKeys(visit.slug).map((key) => withRecentUse(key, usage))
  const list =
    keys.length === 0
      ? html`<p>No API keys yet.</p>`
      : dataTable(
          'API keys',
          columns,
          keys.map((key) => row(visit, key)),
        )
  const body = html`${created === null ? null : newKeyPanel(created)}
${list}
<p class="hint">A revoked key gets no new tokens; tokens it already has work until they expire.</p>
<h2>Create a key</h2>
<form method="post" action="/console/${visit.slug}/keys">
<input type="hidden" name="${csrfField}" value="${visit.csrf}">
<label for="key-name">Name</label>
<input id="key-name" name="name" required maxlength="100" autocomplete="off" aria-describedby="key-name-hint">
<p class="hint" id="key-name-hint">What uses it, e.g. "storefront" or "ERP import".</p>
<button type="submit">Create the key</button>
</form>`
  return consolePage(visit, 'keys', `${visit.slug}: API keys`, body, flash)
}
