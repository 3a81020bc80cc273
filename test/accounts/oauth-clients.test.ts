/**
 * OAuth with the client libraries people use (issue 15 point 7): openid-client discovers the RFC 8414
 * metadata unmodified and gets tokens with client_secret_basic and client_secret_post; simple-oauth2
 * gets them with the header and the body; jose verifies each token against the metadata's jwks_uri
 * and issuer. A wrong secret answers 401 invalid_client with a Basic challenge only when the client
 * authenticated with the Authorization header (RFC 6749 section 5.2). The issuer is the public URL.
 */
import t from 'tap'
import * as client from 'openid-client'
import { ClientCredentials } from 'simple-oauth2'
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose'
import { startServer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({ tenants: { acme: {} } })

interface Sent {
  readonly url: string
  readonly authorization: string | null
  readonly body: URLSearchParams
}

/**
 * openid-client discovery as a user on http://127.0.0.1 runs it: the issuer URL, algorithm
 * `oauth2` (RFC 8414), plain http allowed. Token requests pass through the real fetch and are
 * recorded, so that a test can see which authentication method was sent.
 */
async function discover(clientAuthentication: client.ClientAuth, sent: Sent[]): Promise<client.Configuration> {
  const config = await client.discovery(new URL(server.url), acme.clientId, undefined, clientAuthentication, {
    algorithm: 'oauth2',
    execute: [client.allowInsecureRequests],
  })
  config[client.customFetch] = (url, options) => {
    const headers = new Headers(options.headers)
    sent.push({
      url,
      authorization: headers.get('authorization'),
      body: new URLSearchParams(String(options.body ?? '')),
    })
    return fetch(url, options as RequestInit)
  }
  return config
}

/** Verifies a token as a resource server would: keys from jwks_uri, issuer from the metadata. */
async function verifyWithMetadata(token: string, metadata: { issuer: string; jwks_uri?: string | undefined }) {
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri!))
  const { payload } = await jwtVerify(token, jwks, {
    issuer: metadata.issuer,
    audience: acme.slug,
    algorithms: ['EdDSA'],
  })
  return payload
}

function simpleClient(secret: string, authorizationMethod: 'header' | 'body'): ClientCredentials {
  return new ClientCredentials({
    client: { id: acme.clientId, secret },
    auth: { tokenHost: server.url, tokenPath: '/oauth2/token' },
    options: { authorizationMethod },
  })
}

t.test(
  'the RFC 8414 metadata names the issuer (the address listened on), token endpoint, JWKS and what they support',
  async (t) => {
    const answer = await server.request('GET', '/.well-known/oauth-authorization-server')
    t.equal(answer.status, 200)
    t.match(answer.headers.get('content-type'), /^application\/json/)
    t.same(answer.body, {
      issuer: server.url,
      token_endpoint: `${server.url}/oauth2/token`,
      jwks_uri: `${server.url}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      response_types_supported: [],
    })
    const jwks = await fetch(answer.body.jwks_uri)
    t.equal(jwks.status, 200, 'jwks_uri answers')
    t.ok(((await jwks.json()) as { keys: unknown[] }).keys.length > 0, 'with keys')
    const openApi = await server.request('GET', '/openapi.json')
    const operation = openApi.body.paths['/.well-known/oauth-authorization-server']?.get
    t.equal(operation?.operationId, 'getOAuthMetadata', 'the document is in the OpenAPI description')
    t.same(operation?.security, [], 'as a public operation')
  },
)

t.test(
  'openid-client: discovery() then clientCredentialsGrant with client_secret_basic; jose verifies the token',
  async (t) => {
    const sent: Sent[] = []
    const config = await discover(client.ClientSecretBasic(acme.clientSecret), sent)
    const metadata = config.serverMetadata()
    t.equal(metadata.issuer, server.url, 'discovery checked the issuer against the URL it was given')
    t.equal(metadata.token_endpoint, `${server.url}/oauth2/token`)
    const tokens = await client.clientCredentialsGrant(config)
    t.equal(sent.length, 1)
    t.equal(sent[0]!.url, metadata.token_endpoint)
    t.match(sent[0]!.authorization, /^Basic /, 'the secret went in the Authorization header')
    t.equal(sent[0]!.body.get('client_secret'), null, 'and not in the body')
    t.equal(tokens.token_type, 'bearer')
    t.equal(tokens.expires_in, 900)
    const payload = await verifyWithMetadata(tokens.access_token, metadata)
    t.equal(payload.iss, server.url)
    t.equal(payload.sub, acme.clientId)
    t.equal(
      (await server.request('GET', '/t/acme/article', { token: tokens.access_token })).status,
      200,
      'the token calls the API',
    )
  },
)

t.test('openid-client: clientCredentialsGrant with client_secret_post; jose verifies the token', async (t) => {
  const sent: Sent[] = []
  const config = await discover(client.ClientSecretPost(acme.clientSecret), sent)
  const tokens = await client.clientCredentialsGrant(config)
  t.equal(sent.length, 1)
  t.equal(sent[0]!.authorization, null, 'no Authorization header')
  t.equal(sent[0]!.body.get('client_id'), acme.clientId, 'the credentials went in the body')
  t.equal(sent[0]!.body.get('client_secret'), acme.clientSecret)
  const payload = await verifyWithMetadata(tokens.access_token, config.serverMetadata())
  t.equal(payload.sub, acme.clientId)
  t.equal(payload['tid'], 'acme')
})

t.test(
  'openid-client: a wrong secret is invalid_client, with a Basic challenge only for client_secret_basic',
  async (t) => {
    const basic = await discover(client.ClientSecretBasic('f'.repeat(64)), [])
    const challenged = await client.clientCredentialsGrant(basic).then(
      () => null,
      (error: unknown) => error,
    )
    t.ok(
      challenged instanceof client.WWWAuthenticateChallengeError,
      'the Basic client gets a WWW-Authenticate challenge',
    )
    const challenge = challenged as client.WWWAuthenticateChallengeError
    t.equal(challenge.status, 401)
    t.same(
      challenge.cause.map((entry) => entry.scheme),
      ['basic'],
    )
    const post = await discover(client.ClientSecretPost('f'.repeat(64)), [])
    const refused = await client.clientCredentialsGrant(post).then(
      () => null,
      (error: unknown) => error,
    )
    t.ok(refused instanceof client.ResponseBodyError, 'the body client gets the RFC 6749 error body, no challenge')
    const bodyError = refused as client.ResponseBodyError
    t.equal(bodyError.status, 401)
    t.equal(bodyError.error, 'invalid_client')
    t.equal(bodyError.response.headers.get('www-authenticate'), null)
  },
)

t.test('simple-oauth2: getToken with the Authorization header and with the body; jose verifies both', async (t) => {
  const metadata = (await server.request('GET', '/.well-known/oauth-authorization-server')).body
  for (const method of ['header', 'body'] as const) {
    const token = await simpleClient(acme.clientSecret, method).getToken({})
    t.equal(token.token['token_type'], 'Bearer', `${method}: token_type`)
    t.equal(token.expired(), false, `${method}: not expired`)
    const payload = await verifyWithMetadata(token.token['access_token'] as string, metadata)
    t.equal(payload.iss, metadata.issuer, `${method}: iss is the metadata's issuer`)
    t.equal(payload.sub, acme.clientId, `${method}: sub`)
  }
})

t.test(
  'simple-oauth2: a wrong secret answers 401 invalid_client; WWW-Authenticate: Basic only via the header',
  async (t) => {
    const failure = async (method: 'header' | 'body') => {
      const error = await simpleClient('wrong', method)
        .getToken({})
        .then(
          () => null,
          (caught: unknown) =>
            caught as {
              output: { statusCode: number }
              data: { headers: Record<string, string | undefined>; payload: Record<string, unknown> }
            },
        )
      if (error === null) throw new Error(`${method}: a wrong secret was accepted`)
      return error
    }
    const header = await failure('header')
    t.equal(header.output.statusCode, 401)
    t.equal(header.data.payload['error'], 'invalid_client')
    t.equal(header.data.headers['www-authenticate'], 'Basic realm="token"')
    const body = await failure('body')
    t.equal(body.output.statusCode, 401)
    t.equal(body.data.payload['error'], 'invalid_client')
    t.equal(
      body.data.headers['www-authenticate'],
      undefined,
      'no challenge for a client that sent its secret in the body',
    )
  },
)

t.test('PRICING_PUBLIC_URL is the issuer of the metadata and of every token (a trailing slash dropped)', async (t) => {
  const publicServer = await startServer({ env: { PRICING_PUBLIC_URL: 'https://pricing.example.com/' } })
  t.teardown(() => publicServer.dispose())
  const shop = await publicServer.tenant('shop')
  const metadata = (await publicServer.request('GET', '/.well-known/oauth-authorization-server')).body
  t.equal(metadata.issuer, 'https://pricing.example.com')
  t.equal(metadata.token_endpoint, 'https://pricing.example.com/oauth2/token')
  t.equal(metadata.jwks_uri, 'https://pricing.example.com/.well-known/jwks.json')
  t.equal(decodeJwt(shop.token).iss, metadata.issuer)
  t.equal((await shop.get('/article')).status, 200, 'the server verifies its own issuer')
})
