/**
 * A tenant's users and API keys, for people signed in to its console (issue 9; API.md §4): who may
 * do what is server/people/roles.ts's table. Users are invited by e-mail (a magic link that signs
 * them in); the last owner can be neither removed nor demoted. Every role manages API keys (SPEC
 * Authentication 6): the secret is answered once, at creation.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { route, type TenantContext, type TenantRoute } from '../api.js'
import { ApiError, notFound, validationError } from '../errors.js'
import { membershipPermission, requirePermission, roles } from '../people/roles.js'
import { normalEmail } from '../people/sign-in.js'
import { createKey, publicKey, revokeKey, withRecentUse } from '../provision.js'
import type { MemberRecord, Role } from '../../storage/system-store.js'

const RoleSchema = Type.Union(roles.map((role) => Type.Literal(role)))
const User = Type.Object({ email: Type.String(), role: RoleSchema, created_at: Type.String({ format: 'date-time' }) })
const InviteBody = Type.Object({ email: Type.String({ minLength: 3, maxLength: 254 }), role: RoleSchema }, { additionalProperties: false })
const RoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false })
const KeyBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false })
const Key = Type.Object({
  name: Type.String(),
  client_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})
const NewKey = Type.Object({ ...Key.properties, client_secret: Type.String({ description: '64 hex characters, shown only here' }) })

function publicUser(record: MemberRecord): typeof User.static {
  return { email: record.email, role: record.role, created_at: new Date(record.created_at).toISOString() }
}

/** The acting person's role must allow changing a membership that is or becomes `affected`. */
function mayChange(context: TenantContext, ...affected: (Role | undefined)[]): void {
  requirePermission(context.tenant.system, context.tenant.slug, context.actor, membershipPermission(...affected))
}

function existingUser(context: TenantContext): MemberRecord {
  const email = normalEmail(decodeURIComponent(context.params['email']!))
  const record = email === null ? undefined : context.tenant.system.member(context.tenant.slug, email)
  if (record === undefined) throw notFound(`User ${context.params['email']}`)
  return record
}

function ownerCount(context: TenantContext): number {
  return context.tenant.system.listMembers(context.tenant.slug).filter((member) => member.role === 'owner').length
}

const memberKey = (record: MemberRecord): string => `${record.tenant} ${record.email}`

export function peopleRoutes(): TenantRoute[] {
  const consoleRoute = { tag: 'management', access: 'console', dimension: 'ingest' } as const
  return [
    route({
      ...consoleRoute,
      method: 'GET',
      path: '/management/users',
      operationId: 'listUsers',
      summary: "The tenant's users, oldest first",
      permission: 'users.read',
      response: Type.Array(User),
      dimension: 'query',
      handler: (context) => ({ status: 200, headers: { 'cache-control': 'no-store' }, body: context.tenant.system.listMembers(context.tenant.slug).map(publicUser) }),
    }),
    route<typeof InviteBody.static>({
      ...consoleRoute,
      method: 'POST',
      path: '/management/users',
      operationId: 'inviteUser',
      summary: 'Invite a person by e-mail with a role: they get a magic link that signs them in',
      permission: 'users.manage',
      body: InviteBody,
      response: User,
      responseStatus: 201,
      errors: [409],
      handler: async (context) => {
        const email = normalEmail(context.body.email)
        if (email === null) throw validationError([{ path: '/email', message: 'must be an e-mail address' }], 'email must be an e-mail address')
        mayChange(context, context.body.role)
        const system = context.tenant.system
        if (system.member(context.tenant.slug, email) !== undefined) throw new ApiError('conflict', `${email} is already a user of ${context.tenant.slug}`)
        const record: MemberRecord = { tenant: context.tenant.slug, email, role: context.body.role, created_at: context.nowMs }
        await system.put(system.members, memberKey(record), record)
        await context.signIn.request(email, context.nowMs, { tenant: context.tenant.slug, role: record.role, by: context.actor })
        return { status: 201, body: publicUser(record) }
      },
    }),
    route<typeof RoleBody.static>({
      ...consoleRoute,
      method: 'PUT',
      path: '/management/users/:email',
      operationId: 'changeUserRole',
      summary: "Change a user's role (the last owner stays an owner)",
      permission: 'users.manage',
      body: RoleBody,
      response: User,
      errors: [404, 409],
      handler: async (context) => {
        const record = existingUser(context)
        mayChange(context, record.role, context.body.role)
        if (record.role === 'owner' && context.body.role !== 'owner' && ownerCount(context) === 1) throw new ApiError('conflict', 'The last owner cannot be demoted: make someone else owner first')
        const changed: MemberRecord = { ...record, role: context.body.role }
        await context.tenant.system.put(context.tenant.system.members, memberKey(changed), changed)
        return { status: 200, body: publicUser(changed) }
      },
    }),
    route({
      ...consoleRoute,
      method: 'DELETE',
      path: '/management/users/:email',
      operationId: 'removeUser',
      summary: 'Remove a user (never the last owner); their sessions no longer reach this tenant',
      permission: 'users.manage',
      responseStatus: 204,
      errors: [404, 409],
      handler: async (context) => {
        const record = existingUser(context)
        mayChange(context, record.role)
        if (record.role === 'owner' && ownerCount(context) === 1) throw new ApiError('conflict', 'The last owner cannot be removed')
        await context.tenant.system.remove(context.tenant.system.members, memberKey(record))
        return { status: 204 }
      },
    }),
    route({
      ...consoleRoute,
      method: 'GET',
      path: '/management/keys',
      operationId: 'listKeys',
      summary: "The tenant's API keys with their last-used time (no secrets)",
      permission: 'keys.manage',
      response: Type.Array(Key),
      dimension: 'query',
      handler: (context) => ({
        status: 200,
        headers: { 'cache-control': 'no-store' },
        body: context.tenant.system.listKeys(context.tenant.slug).map((key) => publicKey(withRecentUse(key, context.keyUsage))),
      }),
    }),
    route<typeof KeyBody.static>({
      ...consoleRoute,
      method: 'POST',
      path: '/management/keys',
      operationId: 'createKey',
      summary: 'Create an API key: the 64-hex secret is in this answer only',
      permission: 'keys.manage',
      body: KeyBody,
      response: NewKey,
      responseStatus: 201,
      handler: async (context) => {
        const { record, clientSecret } = await createKey(context.tenant.system, context.tenant.slug, context.body.name, context.nowMs)
        return { status: 201, headers: { 'cache-control': 'no-store' }, body: { ...publicKey(record), client_secret: clientSecret } }
      },
    }),
    route({
      ...consoleRoute,
      method: 'DELETE',
      path: '/management/keys/:clientId',
      operationId: 'revokeKey',
      summary: 'Revoke a key: no new tokens; tokens already issued live until they expire',
      permission: 'keys.manage',
      responseStatus: 204,
      errors: [404],
      handler: async (context) => {
        await revokeKey(context.tenant.system, context.tenant.slug, context.params['clientId']!, context.nowMs)
        return { status: 204 }
      },
    }),
  ]
}
