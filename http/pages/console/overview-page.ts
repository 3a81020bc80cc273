/**
 * A tenant's console overview (issue 9), read-only: what the tenant holds against its plan's limits
 * (articles, pricelists, prices, changelog), its rate-limit buckets as they stand, and charts of its
 * requests and ingested items per minute over the last hour (tenant/activity.ts, counted by
 * the request pipeline).
 * @module
 */
import { html } from '../shared/html.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import type { TenantRuntime } from '../../../tenant/runtime.js'
import type { ConsoleVisit } from './access.js'
import { barChart } from './chart.js'
import type { Flash } from '../shared/flash.js'
import { consolePage } from './frame.js'

const number = new Intl.NumberFormat('en-US')

const usageColumns: readonly Column[] = [
  { title: 'What', rowHeader: true },
  { title: 'Now', number: true },
  { title: 'Limit', number: true },
  { title: 'Used' },
]
const rateColumns: readonly Column[] = [
  { title: 'Bucket', rowHeader: true },
  { title: 'Rate', number: true },
  { title: 'Burst', number: true },
  { title: 'Available now', number: true },
]
const minuteColumns: readonly Column[] = [
  { title: 'Minute (UTC)' },
  { title: 'Queries', number: true },
  { title: 'Ingest requests', number: true },
  { title: 'Ingested items', number: true },
]

function usageRow(label: string, used: number, limit: number | null): Cell[] {
  const share = limit === null || limit === 0 ? null : Math.min(100, Math.round((used / limit) * 100))
  const meter =
    share === null
      ? ''
      : html`<meter min="0" max="100" value="${share}" aria-label="${label}: ${share}% of the limit">${share}%</meter> ${share}%`
  return [label, number.format(used), limit === null ? 'unlimited' : number.format(limit), meter]
}

function rateRow(label: string, tenant: TenantRuntime, dimension: 'query' | 'ingest', nowMs: number): Cell[] {
  const bucket = tenant.buckets[dimension]
  if (bucket.rate === null || bucket.burst === null) return [label, 'unlimited', 'unlimited', 'unlimited']
  const remaining = bucket.headers(nowMs)['x-ratelimit-remaining'] ?? String(bucket.burst)
  return [label, `${number.format(bucket.rate)}/s`, number.format(bucket.burst), number.format(Number(remaining))]
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
${dataTable('Usage and plan limits', usageColumns, [
  usageRow('Articles', tenant.catalog.liveCount('article'), limits.articles),
  usageRow('Pricelists', tenant.catalog.liveCount('pricelist'), limits.pricelists),
  usageRow('Prices (article and pricelist pairs)', tenant.prices.livePairCount, limits.prices),
  usageRow('Changelog entries', Math.max(0, changelogEntries), limits.changelog_capacity),
])}
<p class="hint">The changelog's latest sequence is ${number.format(tenant.store.sequence)}; beyond its capacity the oldest entries are dropped.</p>
<h2>Rate limits</h2>
${dataTable('Rate limits', rateColumns, [
  rateRow('Queries', tenant, 'query', nowMs),
  rateRow('Ingest (items)', tenant, 'ingest', nowMs),
])}
<h2>The last hour</h2>
${barChart('chart-requests', { title: 'Requests', unit: 'requests', values: minutes.map((minute) => minute.queries + minute.ingestRequests) })}
${barChart('chart-ingest', { title: 'Ingested items', unit: 'items', values: minutes.map((minute) => minute.ingestItems) })}
<details><summary>The figures per minute</summary>
${dataTable(
  'Figures per minute',
  minuteColumns,
  minutes
    .filter((minute) => minute.queries + minute.ingestRequests > 0)
    .map((minute) => [
      new Date(minute.at).toISOString().slice(11, 16),
      minute.queries,
      minute.ingestRequests,
      minute.ingestItems,
    ]),
  'No requests in the last hour.',
)}
</details>`
  return consolePage(visit, 'overview', `${visit.slug}: overview`, body, flash)
}
