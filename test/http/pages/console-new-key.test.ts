/**
 * Creating an API key in the console is POST-redirect-GET, against the real server: the form's post
 * creates one key and answers a 303; the page it leads to shows the secret once, to the session that
 * created it; reloading that page creates no second key and shows the key without its secret,
 * saying it was shown once. Another person's session following the same address sees no secret.
 */
import t from 'tap'
import { signIn } from '../../helpers/console.js'
import type { Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const cookies: Record<string, string> = {}
const owner = 'owner@keys.example'
const colleague = 'editor@keys.example'

function get(email: string, path: string): Promise<Answer> {
  return server.request('GET', path, { headers: { cookie: cookies[email]! }, redirect: 'manual' })
}

const keysOf = async () =>
  (await server.admin('GET', '/admin/tenants/keys/keys')).body as { client_id: string; name: string }[]
const secretOn = (answer: Answer): string | null =>
  /id="new-client-secret" type="text" readonly value="([0-9a-f]{64})"/.exec(answer.text)?.[1] ?? null

const { server } = await suiteServer({ env: { PRICING_BACKUP_INTERVAL_S: '0' } })

t.before(async () => {
  await server.admin('POST', '/admin/tenants', { slug: 'keys', tier: 'standard', region: 'local', owner_email: owner })
  cookies[owner] = `pricing_session=${await signIn(server, owner)}`
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await get(owner, '/console/keys')).text)![1]!
  await server.request('POST', '/console/keys/users', {
    raw: new URLSearchParams({ _csrf: csrf, email: colleague, role: 'editor' }).toString(),
    headers: { cookie: cookies[owner]!, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
  })
  cookies[colleague] = `pricing_session=${await signIn(server, colleague)}`
})

t.test(
  'the post creates one key and redirects; the page shows the secret once; a reload creates nothing',
  async (t) => {
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await get(owner, '/console/keys/keys')).text)![1]!
    const created = await server.request('POST', '/console/keys/keys', {
      raw: new URLSearchParams({ _csrf: csrf, name: 'storefront' }).toString(),
      headers: { cookie: cookies[owner]!, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    })
    t.equal(created.status, 303, 'the post answers a redirect, not the page with the secret')
    t.notMatch(created.text, /[0-9a-f]{64}/, 'its answer holds no secret')
    const keys = await keysOf()
    t.equal(keys.length, 1, 'one key')
    const location = created.headers.get('location')!
    t.equal(location, `/console/keys/keys?created=${keys[0]!.client_id}`)

    // Another session following the same address gets no secret (and takes nothing away).
    const theirs = await get(colleague, location)
    t.equal(theirs.status, 200)
    t.equal(secretOn(theirs), null, "another person's session sees no secret")

    const shown = await get(owner, location)
    t.equal(shown.status, 200)
    const secret = secretOn(shown)
    t.ok(secret, 'the page the post leads to shows the secret')
    t.match(shown.text, /Copy the secret now: it is shown only this once\./)
    t.match(
      shown.text,
      new RegExp(`-d client_id=${keys[0]!.client_id} -d client_secret=${secret}`),
      'and the curl line with it',
    )
    const token = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: keys[0]!.client_id,
        client_secret: secret!,
      }).toString(),
    })
    t.equal(token.status, 200, "the secret shown is the key's secret")

    const reloaded = await get(owner, location)
    t.equal(reloaded.status, 200)
    t.equal(secretOn(reloaded), null, 'a reload shows no secret')
    t.notMatch(reloaded.text, new RegExp(secret!), 'nowhere')
    t.match(
      reloaded.text,
      /Your new key "storefront"<\/h2>\n<p role="status">Its secret was shown once, when the key was created, and is not kept/,
      'and says it was shown once',
    )
    t.match(reloaded.text, new RegExp(`value="${keys[0]!.client_id}"`), 'with the client id')
    t.equal((await keysOf()).length, 1, 'still one key')
  },
)

t.test("a made-up or another tenant's key in the address shows nothing", async (t) => {
  const other = await server.admin('POST', '/admin/tenants', {
    slug: 'other',
    tier: 'standard',
    region: 'local',
    owner_email: 'o@other.example',
  })
  t.equal(other.status, 201)
  const foreign = await server.admin('POST', '/admin/tenants/other/keys', { name: 'theirs' })
  for (const clientId of ['nope', foreign.body.client_id as string]) {
    const answer = await get(owner, `/console/keys/keys?created=${clientId}`)
    t.equal(answer.status, 200)
    t.notMatch(answer.text, /Your new key/, `created=${clientId}: no panel`)
    t.notMatch(answer.text, /theirs/)
  }
})
