/**
 * The overview's chart (issue 9): a per-minute series of the last hour as an SVG bar chart drawn on
 * the server (no script, no inline style: SVG attributes only, so the page's CSP holds), with its
 * figures in a table for screen readers and for anyone who wants the numbers. The scale's labels are
 * HTML around the SVG, not SVG text: the SVG scales with the page's width, and its text would shrink
 * with it (to about 6 px on a phone), while HTML text keeps the stylesheet's size.
 * @module
 */
import { html, type Html } from '../shared/html.js'

const width = 600
const height = 100
/** Room above the tallest bar and below the axis, in the SVG's units. */
const top = 4
const bottom = 2

export interface Series {
  readonly title: string
  readonly unit: string
  /** Oldest first, one value per minute. */
  readonly values: readonly number[]
}

/** A bar chart of `series` (one bar a minute), the largest value and the total in its label. */
export function barChart(id: string, series: Series): Html {
  const max = Math.max(0, ...series.values)
  const total = series.values.reduce((sum, value) => sum + value, 0)
  const slot = width / series.values.length
  const plot = height - top - bottom
  const bars = series.values.map((value, index) => {
    if (value === 0 || max === 0) return null
    const barHeight = Math.max(1, Math.round((value / max) * plot))
    return html`<rect x="${(index * slot + 1).toFixed(1)}" y="${top + plot - barHeight}" width="${Math.max(1, slot - 2).toFixed(1)}" height="${barHeight}" class="bar"><title>${value} ${series.unit}</title></rect>`
  })
  const label = `${series.title}: ${total} ${series.unit} in the last hour, at most ${max} in a minute`
  // The scale's labels repeat what the title and the caption say: hidden from screen readers.
  return html`<figure class="chart">
<p class="chart-scale" aria-hidden="true"><span class="chart-label">${max} / min</span></p>
<svg id="${id}" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-labelledby="${id}-title">
<title id="${id}-title">${label}</title>
<line x1="0" y1="${top + plot}" x2="${width}" y2="${top + plot}" class="axis"></line>
${bars}
</svg>
<p class="chart-scale" aria-hidden="true">
<span class="chart-label">60 min ago</span><span class="chart-label">now</span>
</p>
<figcaption>${label}</figcaption>
</figure>`
}
