/**
 * Tokens made by a test, for attacks on the bearer check: the server's own signing key read from
 * its system LMDB environment (read-only), and the claims the service puts in its tokens.
 */
import path from 'node:path'
import { SignJWT, type JWK } from 'jose'
import { open } from 'lmdb'
import type { TestServer } from './server.js'

/** The server's newest signing key, read from its system LMDB environment (read-only). */
export async function serverSigningKey(
  server: TestServer,
): Promise<{ kid: string; alg: string; privateJwk: JWK; publicJwk: JWK }> {
  const env = open({ path: path.join(server.dataDir, 'system'), readOnly: true })
  try {
    const db = env.openDB<{ kid: string; alg: string; private_jwk: JWK; public_jwk: JWK; created_at: number }, string>({
      name: 'signing_keys',
    })
    const records = [...db.getRange()].map((entry) => entry.value).sort((a, b) => b.created_at - a.created_at)
    const newest = records[0]!
    return { kid: newest.kid, alg: newest.alg, privateJwk: newest.private_jwk, publicJwk: newest.public_jwk }
  } finally {
    await env.close()
  }
}

/** The claims of an API key's token for `slug`, as the service issues them. */
export function keyTokenClaims(issuer: string, slug: string, clientId: string, iatS: number, expS: number): SignJWT {
  return new SignJWT({ tid: slug, typ: 'key', scope: 'api' })
    .setIssuer(issuer)
    .setSubject(clientId)
    .setAudience(slug)
    .setIssuedAt(iatS)
    .setExpirationTime(expS)
    .setJti(crypto.randomUUID())
}
