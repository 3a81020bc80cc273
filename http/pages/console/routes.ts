/**
 * The tenant console's pages and form posts (issue 9), `/console/{slug}/...`: server-rendered HTML
 * for people signed in to the portal who are users of the tenant (http/pages/console/access.ts). Pages
 * answer 200 with HTML; a form post does what it says through the same functions as the JSON
 * endpoints (accounts/people/memberships.ts, accounts/provision.ts, tenant/backups/) and answers a 303
 * back to its page with a message; a new key's goes to the keys page, which shows its secret once
 * (http/pages/console/new-key-secrets.ts), so that a reload creates no second key. These are pages, not
 * API: they are listed in docs/api.md ("Web pages"), not in the OpenAPI document.
 * @module
 */
import { statusOf } from '../../error-status.js'
import type { Reply, RootContext, RootRoute } from '../../contracts.js'
import { startRestore } from '../../../tenant/backups/restore.js'
import { takeBackup } from '../../../tenant/backups/take.js'
import { tokenLifetimeS } from '../../../accounts/auth.js'
import { ApiError, notFound, validationError } from '../../../platform/errors.js'
import {
  changeMemberRole,
  existingMember,
  inviteMember,
  removeMember,
  type MembershipChange,
} from '../../../accounts/people/memberships.js'
import type { Permission } from '../../../accounts/people/roles.js'
import { roles } from '../../../accounts/people/roles.js'
import { createKey, revokeKey } from '../../../accounts/provision.js'
import { errorPage } from '../shared/error-page.js'
import { flashOf } from '../shared/flash.js'
import { html } from '../shared/html.js'
import { backTo, backToSession, formFields } from '../shared/form.js'
import type { Role } from '../../../storage/system-store.js'
import { formVisit, signedInPerson, type ConsoleVisit } from './access.js'
import { backupFirstField, backupsPage, restorePath } from './backups-page.js'
import { changelogPage } from './changelog-page.js'
import { confirmPage } from './confirm-page.js'
import { keysPage, type NewKey } from './keys-page.js'
import { overviewPage } from './overview-page.js'
import { pageRoute } from './page-route.js'
import { correctionAction, correctionsPath } from './prices/corrections-page.js'
import { priceConsoleRoutes } from './prices/routes.js'
import { userPath, usersPage } from './users-page.js'

const signInFirst = (): Reply => backTo('/portal', { error: 'sign-in-first' })

/** A path parameter as written in a link (percent-encoded); a malformed one is a 404. */
function pathValue(context: RootContext, name: string): string {
  try {
    return decodeURIComponent(context.params[name]!)
  } catch {
    throw notFound(`${name} ${context.params[name]}`)
  }
}

/**
 * A form post: refused with an error page (403 cross-site or without the form token, 403 for the
 * role, 404 for another tenant); otherwise the action runs, and what it answers (a notice, or a whole
 * reply) or the 4xx it throws goes back to the page.
 */
function actionRoute(
  path: string,
  operationId: string,
  summary: string,
  permission: Permission,
  back: (visit: ConsoleVisit) => string,
  run: (context: RootContext, visit: ConsoleVisit, form: URLSearchParams) => Promise<string | Reply>,
): RootRoute {
  return {
    method: 'POST',
    path,
    operationId,
    summary,
    tag: 'console',
    page: true,
    handler: async (context) => {
      const person = signedInPerson(context)
      if (person === null) return signInFirst()
      const form = formFields(context.incoming) ?? new URLSearchParams()
      let visit: ConsoleVisit
      try {
        visit = formVisit(context, person, form, permission)
      } catch (error) {
        return errorPage(error, person.email)
      }
      try {
        const outcome = await run(context, visit, form)
        return typeof outcome === 'string' ? backToSession(back(visit), visit.session, { notice: outcome }) : outcome
      } catch (error) {
        if (error instanceof ApiError && statusOf(error) !== 403)
          return backToSession(back(visit), visit.session, { error: error.message })
        return errorPage(error, person.email)
      }
    },
  }
}

function membershipChange(context: RootContext, visit: ConsoleVisit): MembershipChange {
  return {
    system: context.deps.system,
    signIn: context.deps.signIn,
    tenant: visit.slug,
    actor: visit.email,
    nowMs: context.nowMs,
  }
}

function formRole(form: URLSearchParams): Role {
  const role = form.get('role') ?? ''
  if (!(roles as readonly string[]).includes(role))
    throw validationError(
      [{ path: '/role', message: `must be one of ${roles.join(', ')}` }],
      `The role must be one of ${roles.join(', ')}`,
    )
  return role as Role
}

/** The service's base URL as the person reached it (the curl line of a new key). */
function baseUrl(context: RootContext): string {
  return context.deps.publicUrl !== '' ? context.deps.publicUrl.replace(/\/+$/, '') : `http://${context.incoming.host}`
}

/** The keys page's query field naming the key just created. */
const createdField = 'created'

/** The key the keys page was sent to after creating it, with its secret the first time only. */
function newKey(context: RootContext, visit: ConsoleVisit): NewKey | null {
  const clientId = context.query.get(createdField)
  if (clientId === null) return null
  const record = context.deps.system.keys.get(clientId)
  if (record === undefined || record.tenant !== visit.slug) return null
  return {
    record,
    clientSecret: context.app.newKeySecrets.take(visit.session, clientId, context.nowMs),
    baseUrl: baseUrl(context),
  }
}

const usersBack = (visit: ConsoleVisit): string => `/console/${visit.slug}/users`
const keysBack = (visit: ConsoleVisit): string => `/console/${visit.slug}/keys`
const backupsBack = (visit: ConsoleVisit): string => `/console/${visit.slug}/backups`
/** Where a correction's post goes when it fails outside its action (which goes back to its price). */
const correctionsBack = (visit: ConsoleVisit): string => correctionsPath(visit.slug)

export function consoleRoutes(): RootRoute[] {
  return [
    ...priceConsoleRoutes(),
    pageRoute(
      '/console/:slug',
      'consoleOverview',
      "A tenant's console: counts, plan limits, rate limits, the last hour",
      'overview.read',
      (context, visit) => overviewPage(visit, context.nowMs, flashOf(context.query, visit.session)),
    ),
    pageRoute(
      '/console/:slug/users',
      'consoleUsers',
      "A tenant's users: roles, invitations",
      'users.read',
      (context, visit) => usersPage(visit, flashOf(context.query, visit.session)),
    ),
    pageRoute(
      '/console/:slug/users/:email/remove',
      'consoleConfirmRemoveUser',
      'Confirm removing a user',
      'users.manage',
      (context, visit) => {
        const member = existingMember(context.deps.system, visit.slug, pathValue(context, 'email'))
        return confirmPage(visit, {
          tab: 'users',
          title: `Remove ${member.email}?`,
          explanation: html`<p>${member.email} (${member.role}) will no longer reach the tenant ${visit.slug}. Their other tenants are not affected.</p>`,
          action: `${userPath(visit, member.email)}/remove`,
          button: `Remove ${member.email}`,
          back: usersBack(visit),
        })
      },
    ),
    pageRoute(
      '/console/:slug/keys',
      'consoleKeys',
      "A tenant's API keys; after creating one, its secret once",
      'keys.manage',
      (context, visit) =>
        keysPage(visit, context.app.keyUsage, flashOf(context.query, visit.session), newKey(context, visit)),
    ),
    pageRoute(
      '/console/:slug/keys/:clientId/revoke',
      'consoleConfirmRevokeKey',
      'Confirm revoking a key',
      'keys.manage',
      (context, visit) => {
        const key = context.deps.system.keys.get(context.params['clientId']!)
        if (key === undefined || key.tenant !== visit.slug) throw notFound(`Key ${context.params['clientId']}`)
        return confirmPage(visit, {
          tab: 'keys',
          title: `Revoke the key "${key.name}"?`,
          explanation: html`<p>The key <span class="mono">${key.client_id}</span> will get no new tokens. Tokens it already has keep working until they expire (at most ${tokenLifetimeS / 60} minutes after they were issued).</p>`,
          action: `/console/${visit.slug}/keys/${key.client_id}/revoke`,
          button: 'Revoke the key',
          back: keysBack(visit),
        })
      },
    ),
    pageRoute(
      '/console/:slug/changelog',
      'consoleChangelog',
      "The changelog, newest first, 50 a page: filtered by type, an effective-price event's cause, a code",
      'prices.read',
      changelogPage,
    ),
    pageRoute(
      '/console/:slug/backups',
      'consoleBackups',
      "A tenant's backups and restore status",
      'backups.read',
      (context, visit) => backupsPage(visit, flashOf(context.query, visit.session)),
    ),
    pageRoute(
      '/console/:slug/backups/:id/restore',
      'consoleConfirmRestore',
      'Confirm restoring a backup',
      'restore',
      (context, visit) => {
        const id = pathValue(context, 'id')
        const backup = visit.tenant.backups.list().find((candidate) => candidate.id === id)
        if (backup === undefined) throw notFound(`Backup ${id}`)
        return confirmPage(visit, {
          tab: 'backups',
          title: `Restore ${backup.id}?`,
          explanation: html`<p>The tenant ${visit.slug} goes back to its state of ${backup.created.slice(0, 19).replace('T', ' ')} UTC. Every change since then is undone (the changelog records each difference, and webhooks receive them). Reads go on during the restore; writes answer 503 until it ends.</p>`,
          action: restorePath(visit, backup.id),
          fields: html`<div class="check"><input id="${backupFirstField}" name="${backupFirstField}" type="checkbox" value="true" checked><label for="${backupFirstField}">Take a backup of the current state first</label></div>
<p class="hint">Checked, the state before the restore stays as a backup of its own, so the restore can be undone.</p>`,
          button: 'Restore this backup',
          back: backupsBack(visit),
        })
      },
    ),
    actionRoute(
      '/console/:slug/users',
      'consoleInviteUser',
      'Invite a user (form)',
      'users.manage',
      usersBack,
      async (context, visit, form) => {
        const record = await inviteMember(membershipChange(context, visit), form.get('email') ?? '', formRole(form))
        return `Invited ${record.email} as ${record.role}: they have a mail with their sign-in link.`
      },
    ),
    actionRoute(
      '/console/:slug/users/:email/role',
      'consoleChangeUserRole',
      "Change a user's role (form)",
      'users.manage',
      usersBack,
      async (context, visit, form) => {
        const record = await changeMemberRole(
          membershipChange(context, visit),
          pathValue(context, 'email'),
          formRole(form),
        )
        return `${record.email} is now ${record.role}.`
      },
    ),
    actionRoute(
      '/console/:slug/users/:email/remove',
      'consoleRemoveUser',
      'Remove a user (form)',
      'users.manage',
      usersBack,
      async (context, visit) => {
        const record = await removeMember(membershipChange(context, visit), pathValue(context, 'email'))
        return `Removed ${record.email}.`
      },
    ),
    actionRoute(
      '/console/:slug/keys',
      'consoleCreateKey',
      'Create an API key (form): the page it redirects to shows its secret once',
      'keys.manage',
      keysBack,
      async (context, visit, form) => {
        const name = (form.get('name') ?? '').trim()
        if (name.length === 0 || name.length > 100)
          throw validationError(
            [{ path: '/name', message: 'must be 1 to 100 characters' }],
            'The name must be 1 to 100 characters',
          )
        const { record, clientSecret } = await createKey(context.deps.system, visit.slug, name, context.nowMs)
        // POST-redirect-GET: a reload of the page shows the key again and creates no second one.
        context.app.newKeySecrets.put(visit.session, record.client_id, clientSecret, context.nowMs)
        return {
          status: 303,
          headers: {
            location: `${keysBack(visit)}?${createdField}=${encodeURIComponent(record.client_id)}`,
            'cache-control': 'no-store',
          },
        }
      },
    ),
    actionRoute(
      '/console/:slug/keys/:clientId/revoke',
      'consoleRevokeKey',
      'Revoke an API key (form)',
      'keys.manage',
      keysBack,
      async (context, visit) => {
        const record = await revokeKey(context.deps.system, visit.slug, context.params['clientId']!, context.nowMs)
        return `Revoked the key "${record.name}": it gets no new tokens.`
      },
    ),
    actionRoute(
      '/console/:slug/backups',
      'consoleTakeBackup',
      'Take a backup (form): a manual backup, which thinning never deletes',
      'backups.create',
      backupsBack,
      async (context, visit) => {
        const record = await takeBackup(visit.tenant, 'manual', false, context.nowMs)
        return `Took the backup ${record.id}.`
      },
    ),
    actionRoute(
      '/console/:slug/backups/:id/restore',
      'consoleRestore',
      'Restore a backup (form), optionally after a backup of the current state',
      'restore',
      backupsBack,
      async (context, visit, form) => {
        const id = pathValue(context, 'id')
        // Checked before the backup of the current state, so that a restore that cannot start takes none.
        if (visit.tenant.restoring !== null)
          throw new ApiError('conflict', `A restore of backup ${visit.tenant.restoring} is in progress`)
        if (visit.tenant.backups.get(id) === null) throw notFound(`Backup ${id}`)
        const before =
          form.get(backupFirstField) === 'true' ? await takeBackup(visit.tenant, 'manual', false, context.nowMs) : null
        await startRestore(context.deps.system, visit.tenant, id, visit.email, context.deps.now)
        return `${before === null ? '' : `Took the backup ${before.id} of the state before. `}Restoring ${id}: this page shows when it is done.`
      },
    ),
    actionRoute(
      '/console/:slug/corrections/mark',
      'consoleMarkPriceError',
      'Mark a price version as an error (form): the prior price leaves it out',
      'prices.correct',
      correctionsBack,
      correctionAction('mark'),
    ),
    actionRoute(
      '/console/:slug/corrections/unmark',
      'consoleUnmarkPriceError',
      'Take back the mark on a price version (form)',
      'prices.correct',
      correctionsBack,
      correctionAction('unmark'),
    ),
  ]
}
