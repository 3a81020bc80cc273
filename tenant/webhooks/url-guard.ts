/**
 * Where a webhook may send: HTTPS URLs whose host is a public address (SSRF protection, API.md §9).
 * The address is checked when the webhook is registered and again on every connection, through the
 * `lookup` the HTTPS request uses, so a DNS answer that changes after registration (rebinding) is
 * caught too. `allowPrivate` (PRICING_WEBHOOK_ALLOW_PRIVATE) turns the address check off for tests
 * and on-premises receivers.
 * @module
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'

/** Loopback, private, link-local, shared (CGNAT), multicast, reserved and unspecified ranges. */
const forbiddenRanges: readonly (readonly [string, number, 'ipv4' | 'ipv6'])[] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  // NAT64 addresses could name any of the IPv4 ranges above. (IPv4-mapped addresses are checked
  // as the IPv4 address they carry: a ::ffff:0:0/96 rule would match every IPv4 address, since
  // BlockList compares IPv4 addresses with IPv6 rules in their mapped form.)
  ['64:ff9b::', 96, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
]

const forbidden = new BlockList()
for (const [network, prefix, family] of forbiddenRanges) forbidden.addSubnet(network, prefix, family)

const mappedDotted = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i
const mappedHex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i

/** The IPv4 address an IPv4-mapped IPv6 address carries, or null. */
function mappedIpv4(address: string): string | null {
  const dotted = mappedDotted.exec(address)
  if (dotted !== null) return dotted[1]!
  const hex = mappedHex.exec(address)
  if (hex === null) return null
  const high = Number.parseInt(hex[1]!, 16)
  const low = Number.parseInt(hex[2]!, 16)
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
}

export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  if (family === 4) return forbidden.check(address, 'ipv4')
  const mapped = mappedIpv4(address)
  return mapped === null ? forbidden.check(address, 'ipv6') : forbidden.check(mapped, 'ipv4')
}

/** Why a URL cannot be a webhook's (the message of a 400), or null when it can, address aside. */
export function webhookUrlProblem(text: string): string | null {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be an absolute URL'
  }
  if (url.protocol !== 'https:') return 'must be an https:// URL'
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password'
  if (url.hostname === '') return 'must name a host'
  return null
}

/** The URL's host without the brackets of an IPv6 literal. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/**
 * Null when the URL's host is allowed, else the reason. A host name that does not resolve now is
 * accepted: every connection checks again.
 */
export async function webhookAddressProblem(text: string, allowPrivate: boolean): Promise<string | null> {
  if (allowPrivate) return null
  const host = hostOf(new URL(text))
  if (isIP(host) !== 0) return isForbiddenAddress(host) ? `${host} is not a public address` : null
  let addresses: LookupAddress[]
  try {
    addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      dnsLookup(host, { all: true }, (error, found) => (error === null ? resolve(found) : reject(error))),
    )
  } catch {
    return null
  }
  const refused = addresses.find((entry) => isForbiddenAddress(entry.address))
  return refused === undefined ? null : `${host} resolves to ${refused.address}, which is not a public address`
}

export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError'
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for `https.request` that refuses forbidden addresses. (Node does not call `lookup`
 * for an IP literal; the dispatcher checks those itself before connecting.)
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error !== null) return callback(error, [])
    const refused = addresses.find((entry) => isForbiddenAddress(entry.address))
    if (refused !== undefined)
      return callback(
        new ForbiddenAddressError(`${hostname} resolves to ${refused.address}, which is not a public address`),
        [],
      )
    if (options.all === true) return callback(null, addresses)
    const first = addresses[0]
    if (first === undefined) return callback(new ForbiddenAddressError(`${hostname} has no address`), [])
    callback(null, first.address, first.family)
  })
}
