/**
 * The confirmation step of a console action that cannot be undone (issue 9: revoke a key, remove
 * a user, restore a backup): a page that says what will happen, with the form that does it and a
 * way back. It works without JavaScript and with the keyboard alone.
 * @module
 */
import { csrfField } from '../shared/csrf.js'
import { html, type Html } from '../shared/html.js'
import type { ConsoleVisit } from './access.js'
import { consolePage, type ConsoleTab } from './frame.js'

export interface Confirmation {
  readonly tab: ConsoleTab
  readonly title: string
  readonly explanation: Html
  /** Where the form posts. */
  readonly action: string
  readonly button: string
  /** Choices that go with the action (the restore's "take a backup of the current state first"). */
  readonly fields?: Html
  /** Where "Cancel" goes. */
  readonly back: string
}

export function confirmPage(visit: ConsoleVisit, confirmation: Confirmation): string {
  const body = html`${confirmation.explanation}
<form method="post" action="${confirmation.action}">
<input type="hidden" name="${csrfField}" value="${visit.csrf}">
${confirmation.fields}
<button type="submit" class="danger">${confirmation.button}</button>
</form>
<p><a href="${confirmation.back}">Cancel</a></p>`
  return consolePage(visit, confirmation.tab, confirmation.title, body, null)
}
