/**
 * OAuth 2.0 authorization server metadata (RFC 8414) at `/.well-known/oauth-authorization-server`:
 * the issuer, which is the public root URL and exactly the `iss` every access token carries
 * (server/main.ts gives both the same string), the token endpoint, the JWKS, and what the token
 * endpoint supports. openid-client's `discovery()` (algorithm `oauth2`) reads it and checks that the
 * issuer equals the URL it was given.
 *
 * One document for the whole service, none per tenant: one issuer and one key set sign the tokens
 * of every tenant (the key decides the tenant), and RFC 8414 ties a document to its issuer, so a
 * `/.well-known/oauth-authorization-server/t/{slug}` document would have to name an issuer
 * `{root}/t/{slug}` that no token carries. The per-tenant `/t/{slug}/oauth2/token` stays a legacy
 * alias of the root endpoint and is not advertised.
 * @module
 */
import type { RootRoute } from '../contracts.js'
import { Type } from '@sinclair/typebox'

export const AuthorizationServerMetadata = Type.Object(
  {
    issuer: Type.String({
      description: 'the public root URL (PRICING_PUBLIC_URL, else http://HOST:PORT); equals the `iss` of every token',
    }),
    token_endpoint: Type.String(),
    jwks_uri: Type.String({ description: 'the public keys that verify access tokens' }),
    grant_types_supported: Type.Array(Type.Literal('client_credentials')),
    token_endpoint_auth_methods_supported: Type.Array(
      Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')]),
    ),
    response_types_supported: Type.Array(Type.String(), {
      maxItems: 0,
      description: 'RFC 8414 requires the member; empty because there is no authorization endpoint',
    }),
  },
  { additionalProperties: false },
)
type Metadata = typeof AuthorizationServerMetadata.static

/** The document for a public root URL (no trailing slash). */
export function authorizationServerMetadata(publicUrl: string): Metadata {
  return {
    issuer: publicUrl,
    token_endpoint: `${publicUrl}/oauth2/token`,
    jwks_uri: `${publicUrl}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    // RFC 8414 default when absent is client_secret_basic alone; the body form is named so that
    // clients that prefer it (simple-oauth2's authorizationMethod 'body') know it is accepted.
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: [],
  }
}

export function oauthMetadataRoutes(): RootRoute[] {
  return [
    {
      method: 'GET',
      path: '/.well-known/oauth-authorization-server',
      operationId: 'getOAuthMetadata',
      summary:
        'OAuth 2.0 authorization server metadata (RFC 8414): issuer, token endpoint, JWKS, supported grant and client authentication',
      tag: 'auth',
      response: AuthorizationServerMetadata,
      // Built per request: the public URL is known only once the server listens (port 0 in tests).
      handler: ({ deps }) => ({
        status: 200,
        headers: { 'cache-control': 'max-age=300' },
        body: authorizationServerMetadata(deps.publicUrl),
      }),
    },
  ]
}
