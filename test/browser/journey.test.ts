/**
 * The whole journey of a new customer, in a real browser (issue 9): playwright-core drives Debian's
 * chromium against the real server, whose mail goes over SMTP to a real server on loopback.
 *
 * A person signs in by the link in their mail (its page's Sign in button), requests a tenant (the
 * slug checked as they type), an operator approves it on the operators' page, the requester gets
 * the "ready" mail and opens the console, creates an API key (the secret shown once, the copy button, the curl line), gets a token
 * with it and writes prices through the API, invites a colleague who signs in with their own link,
 * takes a backup and restores it (the status updates itself), opens "why this price" for a SKU they
 * wrote and "what changes" for a price they scheduled, revokes the key, and signs out.
 *
 * Every page is photographed at 1280x800 and 390x844 (test/screenshots/) and checked with axe-core:
 * 0 serious or critical violations; at both sizes every link, button and field must be in sight (not
 * past the viewport's edge, not cut off by a table's scroll box) and a chart's labels at least 11 px
 * (test/helpers/browser.ts). No page may log a console error (a CSP violation would).
 */
import t from 'tap'
import type { Page } from 'playwright-core'
import { auditPage, chromiumPath, launchChromium, noChromium, watchedContext } from '../helpers/browser.js'
import { retailBase, retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer, TenantClient, type TestServer } from '../helpers/server.js'
import { SmtpSink } from '../helpers/smtp-sink.js'

const executable = chromiumPath()
if (executable === null) {
  t.skip(noChromium, () => {})
} else {
  await journey(executable)
}

async function journey(executablePath: string): Promise<void> {
  const smtp = new SmtpSink()
  await smtp.start()
  t.teardown(() => smtp.close())
  const server: TestServer = await startServer({
    env: {
      PRICING_SMTP_URL: smtp.url,
      PRICING_MAIL_FROM: 'pricing@example.com',
      PRICING_OPERATOR_EMAILS: 'operator@example.com',
      PRICING_BACKUP_INTERVAL_S: '0',
    },
  })
  t.teardown(() => server.dispose())
  const browser = await launchChromium(executablePath)
  t.teardown(() => browser.close())

  const customer = await watchedContext(browser)
  const operator = await watchedContext(browser)
  const colleague = await watchedContext(browser)
  const page = await customer.context.newPage()
  const slug = 'acme-shop'
  const email = 'founder@acme.example'

  /** Photographs and checks the page as it stands. */
  async function audit(target: Page, name: string): Promise<void> {
    const violations = await auditPage(target, name)
    t.same(violations, [], `${name}: axe finds no serious or critical violation`)
  }

  /** Opens a mailed link (its page spends nothing) and presses its Sign in button. */
  async function followLink(target: Page, link: string): Promise<void> {
    await target.goto(link)
    await target.getByRole('button', { name: 'Sign in', exact: true }).click()
    await target.waitForURL((url) => url.pathname !== '/portal/verify')
  }

  async function signInWithMail(target: Page, address: string): Promise<void> {
    const before = smtp.to(address).length
    await target.goto(`${server.url}/portal`)
    await target.getByLabel('E-mail address').fill(address)
    await target.getByRole('button', { name: 'Mail me a sign-in link' }).click()
    await target.getByText('We mailed you a sign-in link').waitFor()
    await waitUntil(() => smtp.to(address).length > before, `a sign-in mail to ${address}`)
    await followLink(target, await smtp.link(address))
  }

  await t.test('sign in by the link in the mail, with the keyboard alone', async (t) => {
    await page.goto(`${server.url}/portal`)
    t.equal(await page.title(), 'Sign in · Pricing service')
    await audit(page, 'portal-sign-in')
    let tabs = 0
    while ((await page.evaluate('document.activeElement?.id')) !== 'email' && tabs < 10) {
      await page.keyboard.press('Tab')
      tabs++
    }
    t.ok(tabs < 10, `Tab reaches the e-mail field (${tabs} presses)`)
    t.not(
      await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'),
      'none',
      'the focused field shows its focus',
    )
    await page.keyboard.type(email)
    await page.keyboard.press('Enter')
    await page.getByText('We mailed you a sign-in link').waitFor()
    const link = await smtp.link(email)
    await page.goto(link)
    t.equal(new URL(page.url()).pathname, '/portal/verify', 'the link opens its page, which spends nothing')
    await audit(page, 'sign-in-link')
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.waitForURL((url) => url.pathname !== '/portal/verify')
    t.equal(new URL(page.url()).pathname, '/portal', 'its Sign in button lands on the portal')
    t.ok(await page.getByText(`Signed in as ${email}`).isVisible(), 'the header names the person')
    t.ok(await page.getByText('You are not a user of any tenant yet.').isVisible())
    await audit(page, 'portal-signed-in')
  })

  await t.test('request a tenant: the slug is checked as it is typed', async (t) => {
    const slugField = page.getByLabel('Slug')
    await slugField.fill('Bad_Slug')
    await page.locator('#slug-check').getByText('Bad_Slug: lowercase letters').waitFor()
    t.equal(await slugField.getAttribute('aria-invalid'), 'true', 'a slug against the rule is marked invalid')
    await slugField.fill(slug)
    await page.locator('#slug-check').getByText(`${slug} is available.`).waitFor()
    t.equal(await slugField.getAttribute('aria-invalid'), 'false')
    await page.getByLabel('Tier').selectOption('standard')
    await page.getByRole('button', { name: 'Request the tenant' }).click()
    await page.getByText(`Your request for ${slug} is waiting for approval.`).waitFor()
    const row = page.locator('tr', { hasText: slug })
    t.match(await row.innerText(), /requested/, 'the request is listed with its status')
    await audit(page, 'portal-requested')
    // A second person cannot have the same slug: the check says it is taken.
    await page.getByLabel('Slug').fill(slug)
    await page.locator('#slug-check').getByText(`${slug}: taken (requested)`).waitFor()
    t.pass('an open request takes its slug')
  })

  await t.test("an operator approves it on the operators' page; the requester gets a mail", async (t) => {
    const desk = await operator.context.newPage()
    await signInWithMail(desk, 'operator@example.com')
    await desk.getByRole('link', { name: 'Operator: tenant requests to decide' }).click()
    t.equal(new URL(desk.url()).pathname, '/operator')
    t.match(await desk.locator('tr', { hasText: slug }).innerText(), new RegExp(email))
    await audit(desk, 'operator')
    await desk.getByRole('button', { name: `Approve ${slug}` }).click()
    await desk.getByText(`Approved ${slug}`).waitFor()
    const ready = await smtp.waitFor(email, new RegExp(`/t/${slug}`))
    t.match(ready.text, new RegExp(`${server.url}/t/${slug}`), "the ready mail gives the tenant's base URL")
    // Someone who is not an operator finds no such page.
    t.equal((await page.request.get(`${server.url}/operator`)).status(), 404)
  })

  let clientId = ''
  let clientSecret = ''
  let client: TenantClient

  await t.test(
    'the console: overview, then an API key shown once, a token with it, prices through the API',
    async (t) => {
      await page.goto(`${server.url}/portal`)
      t.ok(
        await page.getByRole('row', { name: `${slug} standard local active owner` }).isVisible(),
        'the tenant is active and the requester its owner',
      )
      await page.getByRole('link', { name: slug }).click()
      t.equal(new URL(page.url()).pathname, `/console/${slug}`)
      t.ok(await page.getByRole('heading', { name: 'Usage and plan limits' }).isVisible())
      await audit(page, 'console-overview-empty')

      await page.getByRole('link', { name: 'API keys' }).click()
      t.ok(await page.getByText('No API keys yet.').isVisible())
      await page.getByLabel('Name').fill('storefront <script>alert(1)</script>')
      await page.getByRole('button', { name: 'Create the key' }).click()
      await page.getByText('Copy the secret now: it is shown only this once.').waitFor()
      clientId = await page.getByLabel('Client id', { exact: true }).inputValue()
      clientSecret = await page.getByLabel('Client secret', { exact: true }).inputValue()
      t.match(clientId, /^[0-9a-f]{24}$/, 'a 24-hex client id')
      t.match(clientSecret, /^[0-9a-f]{64}$/, 'a 64-hex secret')
      t.ok(
        await page.getByRole('heading', { name: 'Your new key "storefront <script>alert(1)</script>"' }).isVisible(),
        'the name is shown as text',
      )
      const copy = page.getByRole('button', { name: 'Copy Client secret' })
      t.ok(await copy.isVisible(), 'the script shows the copy buttons')
      await customer.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
      await copy.click()
      await page.getByRole('button', { name: 'Copied Client secret' }).waitFor()
      t.equal(
        await page.evaluate('navigator.clipboard.readText()'),
        clientSecret,
        'the copy button put the secret on the clipboard',
      )
      await audit(page, 'console-key-created')

      // The curl line, run as it stands.
      const curl = await page.getByLabel('Get a token (curl)').inputValue()
      t.match(
        curl,
        new RegExp(
          `^curl -s -X POST ${server.url}/oauth2/token -d grant_type=client_credentials -d client_id=${clientId} -d client_secret=${clientSecret}$`,
        ),
      )
      const { execFileSync } = await import('node:child_process')
      const args = curl.split(' ').slice(1)
      const token = JSON.parse(execFileSync('curl', args, { encoding: 'utf8' })) as {
        access_token: string
        token_type: string
      }
      t.equal(token.token_type, 'Bearer', 'curl got a token')
      client = new TenantClient(server, slug, clientId, clientSecret)
      client.token = token.access_token
      await retailReference(client, ['SKU-0', 'SKU-1'])
      await writeRetailPrices(client, ['SKU-0', 'SKU-1'], 100)
      t.equal(await retailBase(client, ['SKU-0', 'SKU-1'], 'SKU-'), 100, 'prices written with the token read back')

      await page.goto(`${server.url}/console/${slug}/keys`)
      t.match(await page.locator('tr', { hasText: clientId }).innerText(), /active/, 'the key is listed')
      t.notOk(
        await page
          .getByLabel('Client secret', { exact: true })
          .isVisible()
          .catch(() => false),
        'a reload does not show the secret again',
      )
      await page.getByRole('link', { name: 'Overview' }).click()
      t.match(
        await page.locator('tr', { hasText: 'Pricelists' }).innerText(),
        /^Pricelists\s+1\s+1,000\s+0%$/,
        "one pricelist of the plan's 1,000",
      )
      t.match(
        await page.locator('tr', { hasText: 'Prices' }).innerText(),
        /^Prices \(article and pricelist pairs\)\s+2\s+10,000,000\s+0%$/,
        'two prices',
      )
      const caption = await page.locator('figcaption').first().innerText()
      const requests = Number(/Requests: (\d+) requests/.exec(caption)?.[1])
      t.ok(requests >= 8, `the chart counts the API's requests (${caption})`)
      t.equal((await page.locator('#chart-requests rect.bar').count()) >= 1, true, 'and draws them')
      await audit(page, 'console-overview')
    },
  )

  await t.test('invite a colleague, who signs in with their own link', async (t) => {
    await page.getByRole('link', { name: 'Users' }).click()
    await page.getByLabel('E-mail address').fill('colleague@acme.example')
    await page.getByLabel('Role', { exact: true }).selectOption('editor')
    await page.getByRole('button', { name: 'Send the invitation' }).click()
    await page.getByText('Invited colleague@acme.example as editor').waitFor()
    t.match(await page.locator('tr', { hasText: 'colleague@acme.example' }).innerText(), /colleague@acme\.example/)
    await audit(page, 'console-users')

    const invited = await smtp.waitFor('colleague@acme.example', /invites you to the tenant acme-shop/)
    t.match(invited.text, /as editor/)
    const theirs = await colleague.context.newPage()
    await followLink(theirs, await smtp.link('colleague@acme.example'))
    t.equal(new URL(theirs.url()).pathname, `/console/${slug}`, "the invitation lands on the tenant's console")
    await theirs.getByRole('link', { name: 'Users' }).click()
    t.ok(
      await theirs.getByText('Your role (editor) does not invite or change users.').isVisible(),
      'an editor sees no invitation form',
    )
    t.equal(await theirs.getByRole('button', { name: 'Send the invitation' }).count(), 0)
    await audit(theirs, 'console-users-editor')
  })

  await t.test('take a backup and restore it, the status updating itself', async (t) => {
    await page.getByRole('link', { name: 'Backups' }).click()
    t.ok(await page.getByText('No restore has run.').isVisible())
    await page.getByRole('button', { name: 'Take a backup now' }).click()
    await page.getByText(/Took the backup acme-shop-\S+\./).waitFor()
    const backupId = (await page.locator('tbody tr td.mono').first().innerText()).trim()
    t.match(backupId, /^acme-shop-\d{4}-\d\d-\d\dT/)
    await audit(page, 'console-backups')

    await writeRetailPrices(client, ['SKU-0', 'SKU-1'], 200)
    t.equal(await retailBase(client, ['SKU-0', 'SKU-1'], 'SKU-'), 200, 'prices changed after the backup')

    await page.getByRole('link', { name: `Restore ${backupId}` }).click()
    t.ok(await page.getByRole('heading', { name: `Restore ${backupId}?` }).isVisible(), 'a confirmation page first')
    await audit(page, 'console-restore-confirm')
    await page.getByRole('button', { name: 'Restore this backup' }).click()
    await page.getByText(`Restoring ${backupId}: this page shows when it is done.`).waitFor()
    await page.locator('#restore-status').getByText(`Restored ${backupId} at`).waitFor({ timeout: 30_000 })
    t.pass('the status on the page turned to restored without a reload')
    t.equal(await retailBase(client, ['SKU-0', 'SKU-1'], 'SKU-'), 100, "the backup's prices are back")
  })

  await t.test('why this price for a SKU they wrote, as a waterfall; then what changes this week', async (t) => {
    // RETAIL holds SKU-i at 100 + i EUR NET (VAT 25%); SKU-1 goes to 90 in two days.
    const later = new Date(Date.now() + 2 * 86_400_000).toISOString()
    const scheduled = await client.call('PUT', '/price/SKU-1/RETAIL', { price: 90, start_date: later })
    t.equal(scheduled.status, 202, 'a price scheduled through the API')
    await page.getByRole('link', { name: 'Why this price' }).click()
    await page.getByLabel('SKU').fill('SKU-0')
    await page.getByLabel('Pricelist').selectOption('RETAIL')
    await page.getByRole('button', { name: 'Explain the price' }).click()
    // 100 net + 25 VAT = 125 gross.
    await page.getByRole('heading', { name: 'SKU-0: 125.00 EUR gross' }).waitFor()
    const rows = await page.locator('ol.waterfall li').allInnerTexts()
    t.same(
      rows.map((row) => row.split(/\s*\n\s*/)[0]),
      ['Candidates', 'Inheritance', 'Price version', 'VAT', 'Final amounts'],
      'the steps in the order they ran',
    )
    t.match(rows[2]!, /on RETAIL, in force since .* UTC, written .* UTC by /, 'the version, when and by whom')
    t.match(rows[2]!, /100\.00 EUR$/, 'and its amount')
    t.match(rows[4]!, /net 100\.00 \+ VAT 25\.00\s+Amount after this step:\s+125\.00 EUR$/, 'the final amounts')
    await audit(page, 'console-why-this-price')

    await page.getByRole('link', { name: 'What changes' }).click()
    await page.getByRole('button', { name: 'Show the changes' }).click()
    // SKU-1: 101 + 25% = 126.25 gross now, 90 + 25% = 112.50 in two days: -13.75 / 126.25 = -10.8911%.
    const row = page.getByRole('row', { name: /SKU-1/ })
    await row.waitFor()
    t.match(
      (await row.innerText()).replace(/\s+/g, ' '),
      /^SKU-1 RETAIL 126\.25 EUR 112\.50 EUR -10\.8911 % the list's own price changed$/,
      'the one change, with both amounts, the percent and its cause',
    )
    t.match(await page.getByRole('status').innerText(), /SKUs 1 to 2 of 2 compared, in code order: 1 price changes\./)
    await audit(page, 'console-what-changes')
  })

  await t.test('revoke the key with confirmation: no new tokens', async (t) => {
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByRole('link', { name: /^Revoke storefront/ }).click()
    t.ok(await page.getByText('will get no new tokens').isVisible())
    await audit(page, 'console-revoke-confirm')
    await page.getByRole('button', { name: 'Revoke the key' }).click()
    await page.getByText('Revoked the key').waitFor()
    t.match(await page.locator('tr', { hasText: clientId }).innerText(), /revoked/)
    const refused = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: clientSecret,
      }).toString(),
    })
    t.equal(refused.status, 401, 'the revoked key gets no token')
    t.equal(
      (await client.get('/price/skus-for-pricelist/RETAIL')).status,
      200,
      'a token issued before still works until it expires',
    )
  })

  await t.test('sign out', async (t) => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(`${server.url}/portal**`)
    t.ok(await page.getByRole('button', { name: 'Mail me a sign-in link' }).isVisible(), 'back at the sign-in form')
    await page.goto(`${server.url}/console/${slug}`)
    t.equal(new URL(page.url()).pathname, '/portal', 'the console sends a signed-out person to sign in')
  })

  t.test('no page logged an error (CSP violations included)', async (t) => {
    t.same([...customer.problems, ...operator.problems, ...colleague.problems], [])
  })
}

async function waitUntil(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
