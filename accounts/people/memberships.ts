/**
 * Changes to a tenant's users (issue 9), shared by the JSON endpoints (http/routes/people.ts) and
 * the console's forms (http/pages/console/): invite by e-mail (a magic link that lands on the tenant's
 * console), change a role, remove. Who may do each is accounts/people/roles.ts's table; the last
 * owner can be neither demoted nor removed (409).
 * @module
 */
import { ApiError, notFound, validationError } from '../../platform/errors.js'
import type { MemberRecord, Role, SystemStore } from '../../storage/system-store.js'
import { membershipPermission, requirePermission } from './roles.js'
import { normalEmail, type SignIn } from './sign-in.js'

export interface MembershipChange {
  readonly system: SystemStore
  readonly signIn: SignIn
  readonly tenant: string
  /** The signed-in person who acts. */
  readonly actor: string
  readonly nowMs: number
}

const memberKey = (record: MemberRecord): string => `${record.tenant} ${record.email}`

/** The acting person's role must allow changing a membership that is or becomes `affected`. */
function mayChange(change: MembershipChange, ...affected: (Role | undefined)[]): void {
  requirePermission(change.system, change.tenant, change.actor, membershipPermission(...affected))
}

function ownerCount(change: MembershipChange): number {
  return change.system.listMembers(change.tenant).filter((member) => member.role === 'owner').length
}

/** A user of the tenant by their address (as written in a path: any case), or a 404. */
export function existingMember(system: SystemStore, tenant: string, address: string): MemberRecord {
  const email = normalEmail(address)
  const record = email === null ? undefined : system.member(tenant, email)
  if (record === undefined) throw notFound(`User ${address}`)
  return record
}

/** Adds `address` with `role` and mails them an invitation (201's record); 409 for a user already. */
export async function inviteMember(change: MembershipChange, address: string, role: Role): Promise<MemberRecord> {
  const email = normalEmail(address)
  if (email === null)
    throw validationError([{ path: '/email', message: 'must be an e-mail address' }], 'email must be an e-mail address')
  mayChange(change, role)
  if (change.system.member(change.tenant, email) !== undefined)
    throw new ApiError('conflict', `${email} is already a user of ${change.tenant}`)
  const record: MemberRecord = { tenant: change.tenant, email, role, created_at: change.nowMs }
  await change.system.put(change.system.members, memberKey(record), record)
  await change.signIn.request(email, change.nowMs, { tenant: change.tenant, role, by: change.actor })
  return record
}

export async function changeMemberRole(change: MembershipChange, address: string, role: Role): Promise<MemberRecord> {
  const record = existingMember(change.system, change.tenant, address)
  mayChange(change, record.role, role)
  if (record.role === 'owner' && role !== 'owner' && ownerCount(change) === 1)
    throw new ApiError('conflict', 'The last owner cannot be demoted: make someone else owner first')
  const changed: MemberRecord = { ...record, role }
  await change.system.put(change.system.members, memberKey(changed), changed)
  return changed
}

export async function removeMember(change: MembershipChange, address: string): Promise<MemberRecord> {
  const record = existingMember(change.system, change.tenant, address)
  mayChange(change, record.role)
  if (record.role === 'owner' && ownerCount(change) === 1)
    throw new ApiError('conflict', 'The last owner cannot be removed')
  await change.system.remove(change.system.members, memberKey(record))
  return record
}
