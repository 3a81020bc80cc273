/**
 * The pages' data tables, built one way so that they work on a phone. Wide screens get a table; under
 * 40rem (app.css) each row becomes a card, each cell a line labelled with its column's title (from
 * the cell's `data-label`), so no column, an action column least of all, hides in a box that scrolls
 * sideways without a sign. A column without a visible title (actions) takes the card's full width.
 * @module
 */
import { Html, html } from './html.js'

export interface Column {
  readonly title: string
  /** The title is for screen readers only (an actions column): its cells get no label. */
  readonly hiddenTitle?: boolean
  /** Right-aligned figures on wide screens. */
  readonly number?: boolean
  /** The row's header cell (`<th scope="row">`), the card's title on a phone. */
  readonly rowHeader?: boolean
}

/** A cell: content, or content with a class (a status colour). */
type Content = Html | string | number | null
export type Cell = Content | { readonly content: Content; readonly className: string }

function headerCell(column: Column): Html {
  const title = column.hiddenTitle === true ? html`<span class="visually-hidden">${column.title}</span>` : column.title
  return html`<th scope="col"${column.number === true ? html` class="number"` : null}>${title}</th>`
}

function parts(cell: Cell): { readonly content: Content; readonly className: string } {
  return cell === null || typeof cell !== 'object' || cell instanceof Html ? { content: cell, className: '' } : cell
}

function bodyCell(column: Column, cell: Cell): Html {
  const { content, className } = parts(cell)
  const classes = [column.number === true ? 'number' : '', className].filter((name) => name !== '').join(' ')
  const classAttribute = classes === '' ? null : html` class="${classes}"`
  const label = column.hiddenTitle === true ? null : html` data-label="${column.title}"`
  return column.rowHeader === true
    ? html`<th scope="row"${classAttribute}>${content}</th>`
    : html`<td${label}${classAttribute}>${content}</td>`
}

/**
 * A table in a focusable region named `label` (it scrolls sideways only where it must), or the
 * sentence `empty` when there are no rows (a phone hides the header row of an empty table).
 */
export function dataTable(
  label: string,
  columns: readonly Column[],
  rows: readonly (readonly Cell[])[],
  empty = 'None yet.',
): Html {
  if (rows.length === 0) return html`<p>${empty}</p>`
  const head = html`<thead><tr>${columns.map(headerCell)}</tr></thead>`
  const body = rows.map(
    (cells) => html`<tr>${columns.map((column, index) => bodyCell(column, cells[index] ?? null))}</tr>
`,
  )
  return html`<div class="table-scroll" role="region" aria-label="${label}" tabindex="0"><table class="data">${head}<tbody>
${body}</tbody></table></div>`
}
