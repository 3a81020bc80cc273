/**
 * A tenant's users and API keys, for people signed in to its console (issue 9; API.md §4): who may
 * do what is accounts/people/roles.ts's table. Users are invited by e-mail (a magic link that signs
 * them in); the last owner can be neither removed nor demoted. Every role manages API keys (SPEC
 * Authentication 6): the secret is answered once, at creation.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import {
  changeMemberRole,
  inviteMember,
  removeMember,
  type MembershipChange,
} from '../../accounts/people/memberships.js'
import { roles } from '../../accounts/people/roles.js'
import { createKey, publicKey, revokeKey, withRecentUse } from '../../accounts/provision.js'
import type { MemberRecord } from '../../storage/system-store.js'

const RoleSchema = Type.Union(roles.map((role) => Type.Literal(role)))
const User = Type.Object({ email: Type.String(), role: RoleSchema, created_at: Type.String({ format: 'date-time' }) })
const InviteBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254 }), role: RoleSchema },
  { additionalProperties: false },
)
const RoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false })
const KeyBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false })
const Key = Type.Object({
  name: Type.String(),
  client_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})
const NewKey = Type.Object({
  ...Key.properties,
  client_secret: Type.String({ description: '64 hex characters, shown only here' }),
})

function publicUser(record: MemberRecord): typeof User.static {
  return { email: record.email, role: record.role, created_at: new Date(record.created_at).toISOString() }
}

function membershipChange(context: TenantContext): MembershipChange {
  return {
    system: context.tenant.system,
    signIn: context.signIn,
    tenant: context.tenant.slug,
    actor: context.actor,
    nowMs: context.nowMs,
  }
}

/**
 * The e-mail address of the path. The router has percent-decoded it already (http/router.ts):
 * decoding it again would turn `%25` into the start of an escape, and a malformed one into a 500.
 */
const userParam = (context: TenantContext): string => context.params['email']!

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
      handler: (context) => ({
        status: 200,
        headers: { 'cache-control': 'no-store' },
        body: context.tenant.system.listMembers(context.tenant.slug).map(publicUser),
      }),
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
      handler: async (context) => ({
        status: 201,
        body: publicUser(await inviteMember(membershipChange(context), context.body.email, context.body.role)),
      }),
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
      handler: async (context) => ({
        status: 200,
        body: publicUser(await changeMemberRole(membershipChange(context), userParam(context), context.body.role)),
      }),
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
        await removeMember(membershipChange(context), userParam(context))
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
        body: context.tenant.system
          .listKeys(context.tenant.slug)
          .map((key) => publicKey(withRecentUse(key, context.keyUsage))),
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
        const { record, clientSecret } = await createKey(
          context.tenant.system,
          context.tenant.slug,
          context.body.name,
          context.nowMs,
        )
        return {
          status: 201,
          headers: { 'cache-control': 'no-store' },
          body: { ...publicKey(record), client_secret: clientSecret },
        }
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
