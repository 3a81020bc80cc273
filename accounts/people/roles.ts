/**
 * Who may do what in a tenant's console (issue 9): the one table of permissions by role, decided
 * here and written in docs/api.md ("Roles"). API.md §4 and SPEC Authentication 6: every role may
 * manage API keys. A person's role is their membership's (storage/system-store.ts `members`).
 * @module
 */
import type { Role, SystemStore } from '../../storage/system-store.js'
import { ApiError } from '../../platform/errors.js'

export const roles: readonly Role[] = ['owner', 'admin', 'editor', 'viewer']

export type Permission =
  | 'overview.read'
  | 'users.read'
  | 'users.manage'
  | 'owners.manage'
  | 'keys.manage'
  | 'backups.read'
  | 'backups.create'
  | 'restore'
  | 'prices.read'
  | 'prices.correct'

/**
 * The table. `prices.read` (the console's "why this price" and "what changes"): every role, as every
 * user of a tenant reads its prices through the tenant API with a console token.
 * `prices.correct` (the console's corrections page: mark a price version as an error, take the
 * mark back): owners, admins and editors. Editors change prices elsewhere (their console token
 * and the API keys every role creates write prices through the tenant API, and a mark is such a
 * write, `POST /price/corrections`); a viewer's role in the console is to look, so the page shows
 * a viewer the versions and their marks, without the forms.
 * `users.manage`: invite, change the role of and remove admins, editors and viewers;
 * `owners.manage`: the same for owners.
 */
export const permissionsByRole: Readonly<Record<Role, readonly Permission[]>> = {
  owner: [
    'overview.read',
    'users.read',
    'users.manage',
    'owners.manage',
    'keys.manage',
    'backups.read',
    'backups.create',
    'restore',
    'prices.read',
    'prices.correct',
  ],
  admin: [
    'overview.read',
    'users.read',
    'users.manage',
    'keys.manage',
    'backups.read',
    'backups.create',
    'restore',
    'prices.read',
    'prices.correct',
  ],
  editor: [
    'overview.read',
    'users.read',
    'keys.manage',
    'backups.read',
    'backups.create',
    'prices.read',
    'prices.correct',
  ],
  viewer: ['overview.read', 'users.read', 'keys.manage', 'backups.read', 'prices.read'],
}

export function can(role: Role, permission: Permission): boolean {
  return permissionsByRole[role].includes(permission)
}

/** The permission a change of someone's membership needs: owners' memberships only owners change. */
export function membershipPermission(...affected: readonly (Role | undefined)[]): Permission {
  return affected.includes('owner') ? 'owners.manage' : 'users.manage'
}

/** Refuses (403) a person whose role in `tenant` does not allow `permission`; answers the role. */
export function requirePermission(system: SystemStore, tenant: string, email: string, permission: Permission): Role {
  const role = system.member(tenant, email)?.role
  if (role === undefined || !can(role, permission))
    throw new ApiError(
      'forbidden',
      `The role ${role ?? 'none'} of ${email} does not allow ${permission} (docs/api.md, Roles)`,
    )
  return role
}
