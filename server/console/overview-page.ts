/**
 * A tenant's console overview (issue 9), read-only: what the tenant holds against its plan's limits
 * (articles, pricelists, prices, changelog), its rate-limit buckets as they stand, and charts of its
 * requests and ingested items per minute over the last hour (server/tenant-activity.ts, counted by
 * the request pipeline).
 * @module
 */
import { html } from '../web/html.js'
import type { TenantRuntime } from '../tenants.js'
import type { ConsoleVisit } from './access.js'
import { barChart } from './chart.js'
import type { Flash } from '../web/flash.js'
import { consolePage } from './frame.js'

const number = new Intl.NumberFormat('en-US')

function usageRow(label: string, used: number, limit: number | null) {
  const share = limit === null || limit === 0 ? null : Math.min(100, Math.round((used / limit) * 100))
  return html`<tr><th scope="row">${label}</th><td class="number">${number.format(used)}</td><td class="number">${limit === null ? 'unlimited' : number.format(limit)}</td><td>${share === null ? '' : html`<meter min="0" max="100" value="${share}" aria-label="${label}: ${share}% of the limit">${share}%</meter> ${share}%`}</td></tr>`
}

function rateRow(label: string, tenant: TenantRuntime, dimension: 'query' | 'ingest', nowMs: number) {
  const bucket = tenant.buckets[dimension]
  if (bucket.rate === null || bucket.burst === null) return html`<tr><th scope="row">${label}</th><td colspan="3">unlimited</td></tr>`
  const remaining = bucket.headers(nowMs)['x-ratelimit-remaining'] ?? String(bucket.burst)
  return html`<tr><th scope="row">${label}</th><td class="number">${number.format(bucket.rate)}/s</td><td class="number">${number.format(bucket.burst)}</td><td class="number">${number.format(Number(remaining))}</td></tr>`
}

export function overviewPage(visit: ConsoleVisit, nowMs: number, flash: Flash | null): string {
  const tenant = visit.tenant
  const limits = tenant.limits
  const changelogEntries = tenant.store.sequence - tenant.store.oldestSequence() + 1
  const minutes = tenant.activity.lastHour(nowMs)
  const body = html`<dl class="facts">
<div><dt>Tier</dt><dd>${tenant.record.tier}</dd></div>
<div><dt>Region</dt><dd>${tenant.record.region}</dd></div>
<div><dt>Status</dt><dd class="status-${tenant.record.status}">${tenant.record.status}</dd></div>
<div><dt>Your role</dt><dd>${visit.role}</dd></div>
<div><dt>API base URL</dt><dd><code>/t/${visit.slug}</code></dd></div>
</dl>
<h2>Usage and plan limits</h2>
<div class="table-scroll" role="region" aria-label="Usage and plan limits" tabindex="0"><table class="data"><thead><tr><th scope="col">What</th><th scope="col" class="number">Now</th><th scope="col" class="number">Limit</th><th scope="col">Used</th></tr></thead><tbody>
${usageRow('Articles', tenant.catalog.liveCount('article'), limits.articles)}
${usageRow('Pricelists', tenant.catalog.liveCount('pricelist'), limits.pricelists)}
${usageRow('Prices (article and pricelist pairs)', tenant.prices.livePairCount, limits.prices)}
${usageRow('Changelog entries', Math.max(0, changelogEntries), limits.changelog_capacity)}
</tbody></table></div>
<p class="hint">The changelog's latest sequence is ${number.format(tenant.store.sequence)}; beyond its capacity the oldest entries are dropped.</p>
<h2>Rate limits</h2>
<div class="table-scroll" role="region" aria-label="Rate limits" tabindex="0"><table class="data"><thead><tr><th scope="col">Bucket</th><th scope="col" class="number">Rate</th><th scope="col" class="number">Burst</th><th scope="col" class="number">Available now</th></tr></thead><tbody>
${rateRow('Queries', tenant, 'query', nowMs)}
${rateRow('Ingest (items)', tenant, 'ingest', nowMs)}
</tbody></table></div>
<h2>The last hour</h2>
${barChart('chart-requests', { title: 'Requests', unit: 'requests', values: minutes.map((minute) => minute.queries + minute.ingestRequests) })}
${barChart('chart-ingest', { title: 'Ingested items', unit: 'items', values: minutes.map((minute) => minute.ingestItems) })}
<details><summary>The figures per minute</summary>
<div class="table-scroll" role="region" aria-label="Figures per minute" tabindex="0"><table class="data"><thead><tr><th scope="col">Minute (UTC)</th><th scope="col" class="number">Queries</th><th scope="col" class="number">Ingest requests</th><th scope="col" class="number">Ingested items</th></tr></thead><tbody>
${minutes.filter((minute) => minute.queries + minute.ingestRequests > 0).map((minute) => html`<tr><td>${new Date(minute.at).toISOString().slice(11, 16)}</td><td class="number">${minute.queries}</td><td class="number">${minute.ingestRequests}</td><td class="number">${minute.ingestItems}</td></tr>`)}
</tbody></table></div>
</details>`
  return consolePage(visit, 'overview', `${visit.slug}: overview`, body, flash)
}
