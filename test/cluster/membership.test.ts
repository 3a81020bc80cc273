/**
 * A console token and the membership behind it in a cluster of two nodes on a real Redis: a user
 * removed on one node is refused at their next request on the other, once the shared directory has
 * brought the removal there, not when their token expires.
 */
import t from 'tap'
import { consoleHeaders } from '../helpers/console.js'
import { startCluster } from '../helpers/cluster.js'
import { redisForTest } from '../helpers/redis.js'
import { adminToken } from '../helpers/server.js'
import { eventually } from '../helpers/until.js'

const redis = await redisForTest(t)
if (redis !== null) {
  const nodes = await startCluster(
    t,
    redis,
    [
      { name: 'a', region: 'local' },
      { name: 'b', region: 'local' },
    ],
    1_000,
  )
  const a = nodes.get('a')!
  const b = nodes.get('b')!
  const created = await a.request('POST', '/admin/tenants', {
    body: { slug: 'shop', tier: 'standard', region: 'local', owner_email: 'owner@shop.example' },
    token: adminToken,
  })
  if (created.status !== 201) throw new Error(`tenant create: ${created.status} ${created.text}`)

  await t.test("a removal on node a stops the user's console token on node b", async (t) => {
    const owner = await consoleHeaders(a, 'owner@shop.example', 'shop')
    t.equal(
      (
        await a.request('POST', '/t/shop/management/users', {
          headers: owner,
          body: { email: 'gone@shop.example', role: 'editor' },
        })
      ).status,
      201,
    )
    const gone = await consoleHeaders(a, 'gone@shop.example', 'shop')
    const readOnB = async () => (await b.request('GET', '/t/shop/currency', { headers: gone })).status
    t.equal(
      await eventually(async () => ((await readOnB()) === 200 ? 200 : undefined), 10_000, 'the user reads on b'),
      200,
      'a user reads on b',
    )
    t.equal(
      (await a.request('DELETE', '/t/shop/management/users/gone@shop.example', { headers: owner })).status,
      204,
      'removed on a',
    )
    t.equal(
      await eventually(async () => ((await readOnB()) === 403 ? 403 : undefined), 10_000, 'refused on b'),
      403,
      'the same token is refused on b',
    )
  })
}
