/**
 * Browser tests (issue 9): playwright-core driving Debian's chromium (no browser download), each page
 * photographed at 1280x800 and 390x844 into test/screenshots/ (not committed) and checked with axe-core.
 * axe runs through the DevTools protocol (`page.evaluate`), which the pages' CSP does not govern, so
 * the pages are tested under their real CSP; any console error (a CSP violation among them) is kept
 * for the test to assert on.
 */
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import axe from 'axe-core'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { repoRoot } from './fixtures.js'

/** Where the test's screenshots go. */
export const screenshotsDir = path.join(repoRoot(), 'test', 'screenshots')

/** The chromium to drive: PRICING_CHROMIUM, else Debian's; null when there is none. */
export function chromiumPath(): string | null {
  const candidates = [process.env['PRICING_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((candidate): candidate is string => candidate !== undefined && candidate !== '')
  return candidates.find((candidate) => existsSync(candidate)) ?? null
}

export const noChromium = "no chromium on this machine: the browser tests need Debian's chromium (`apt-get install -y chromium`, which .ci/run does) or PRICING_CHROMIUM"

export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    // Flags for a sandboxed CI machine without network (see the env notes): no background traffic.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  })
}

export interface AxeViolation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly targets: string[]
}

/** A context whose pages record their console errors and failed requests in `problems`. */
export async function watchedContext(browser: Browser): Promise<{ context: BrowserContext; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const problems: string[] = []
  context.on('page', (page) => watch(page, problems))
  return { context, problems }
}

function watch(page: Page, problems: string[]): void {
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error on ${page.url()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`script error on ${page.url()}: ${error.message}`))
}

/**
 * Photographs the page at both sizes (`<name>-1280x800.png`, `<name>-390x844.png`) and answers
 * axe's violations at the impacts serious and critical at either size (every rule axe runs by
 * default: WCAG 2.x A and AA and best practice), and a page that scrolls sideways at either width.
 */
export async function auditPage(page: Page, name: string): Promise<AxeViolation[]> {
  mkdirSync(screenshotsDir, { recursive: true })
  const violations: AxeViolation[] = []
  for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(viewport)
    await page.screenshot({ path: path.join(screenshotsDir, `${name}-${viewport.width}x${viewport.height}.png`), fullPage: true })
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number
    if (width > viewport.width) violations.push({ id: 'page-wider-than-viewport', impact: 'serious', help: `the page scrolls sideways at ${viewport.width} px (${width} px wide)`, targets: ['html'] })
    if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axe.source)
    const result = (await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }
    for (const violation of result.violations) {
      const seen = violations.some((known) => known.id === violation.id)
      if (!seen && (violation.impact === 'serious' || violation.impact === 'critical')) {
        violations.push({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target.join(' ')) })
      }
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 })
  return violations
}
