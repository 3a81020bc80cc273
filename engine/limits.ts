/**
 * Every bound of the engine and of the API in one place, units last, each with the reason it exists.
 * Relations between bounds are asserted when this module loads.
 * @module
 */
import { assert } from './assert.js'

/** The spec's maximum items per request (its example 413 names 2500); plans may lower it. */
export const batchItemsMax = 2500
/** Request bodies: a 2,500-item price batch with quantity breaks and fields fits with room. */
export const requestBodyBytesMax = 8 * 1024 * 1024
/** Codes (SKU, pricelist, tax area, VAT class, key): the spec recommends 64 for pricelist codes. */
export const codeLengthMax = 64
/** Names, descriptions and other free text. */
export const textLengthMax = 1024
/** Metadata: keys per object, values per key and the length of each. */
export const metadataKeysMax = 64
export const metadataValuesMax = 64
export const metadataValueLengthMax = 256
/** Price rules per pricelist and the length of one CEL expression. */
export const priceRulesMax = 100
export const celExpressionLengthMax = 4096
/**
 * CEL compile-time bounds (engine/rules.ts, the parser's own limits): nodes of one expression's
 * syntax tree, its nesting depth, and the elements of a list or map literal. A pricing rule needs
 * tens of nodes; these keep parsing and type-checking a hostile 4,096-character text under a
 * millisecond.
 */
export const celAstNodesMax = 512
/**
 * Syntax tree nodes of all of one pricelist's rules together: compiling costs about 0.7 us per node
 * (measured under load on 2 cores), so a pricelist write compiles in about a millisecond and a flood
 * of hostile writes cannot hold the main thread for tens of milliseconds each.
 */
export const celPricelistNodesMax = 2048
export const celAstDepthMax = 32
export const celLiteralElementsMax = 64
/**
 * CEL run-time bound: sub-expression evaluations that the rules of one pricelist may spend on one
 * SKU together (filters and the expression), and a search filter on one article (the comprehension
 * macros `all`, `exists`, `exists_one` repeat their body per element). Past it the run fails: the
 * SKU answers `rule_error`, a search filter does not match. A rule like `sales * 0.9` behind
 * `article.type == "x"` takes 6; one comprehension over an article's 64 metadata keys a few
 * hundred; one nested in another over 64 keys each passes it. A run to the bound takes about 1 ms
 * on the 2-core bench machine under load (test/security/resource-abuse.test.ts).
 */
export const celEvaluationStepsMax = 5_000
/**
 * Rule steps the main thread spends on one price read, or one query below the worker threshold,
 * before it hands the work to a price worker: this base plus `mainThreadRuleStepsPerSku` per SKU.
 * Ordinary rules stay far below it (6 steps a rule; a chain of 3 pricelists with 10 rules each
 * takes under 200 per SKU); a read of costly rules, a deep chain of them or a bundle of many
 * components passes it after about 0.1 ms and is answered on a worker, below the main thread's
 * priority, so small requests keep their latency (test/security/resource-abuse.test.ts).
 */
export const mainThreadRuleStepsBase = 1_000
export const mainThreadRuleStepsPerSku = 50
/**
 * A search's filter runs once per article the other criteria leave: all its runs together may take
 * this many steps (a few milliseconds); past it the search answers 400 `rule_invalid`, and `text`,
 * `type` or `metadata` narrow it. A filter of 6 steps covers about 16,000 articles.
 */
export const searchFilterStepsMax = 100_000
/**
 * JSON request bodies nest at most this deep (objects and arrays counted together). The deepest
 * body a route accepts nests 5 levels; the bound is checked before parsing, so a body of 8 MiB of
 * `[` costs a scan, not 8 million arrays.
 */
export const jsonDepthMax = 32
/** Inheritance chains longer than this are refused when a pricelist is written. */
export const pricelistDepthMax = 16
/**
 * Bundles may contain bundles; this bounds the nesting so that a configuration error cannot make a
 * read unbounded. Cycles (A contains B contains A) are caught exactly by the resolver's bundle stack.
 */
export const bundleNestingMax = 8
/** Numbered pages (API.md §6). */
export const pageSizeDefault = 100
export const pageSizeMax = 1000
/** Changelog pages (spec). */
export const changelogLimitDefault = 100
export const changelogLimitMax = 1000
/** Settings values are short strings. */
export const settingValueLengthMax = 256
/**
 * Versions of one price marked as errors (tenant/writes/price-corrections.ts): a correction is a
 * person's act on a mistake, so a few; the prior price reads them on each rebuild of its view.
 */
export const priceErrorMarksMax = 100
/** A correction's reason, for the people who read the changelog and the console. */
export const priceErrorReasonLengthMax = 500
/** Largest absolute amount: scaled by 10^4 it stays an exact double (2^53 ≈ 9.007e15). */
export const amountAbsMax = 100_000_000_000

assert(requestBodyBytesMax >= batchItemsMax * 1024, 'body limit must hold a full batch of 1 KiB items')
assert(amountAbsMax * 10_000 < Number.MAX_SAFE_INTEGER, 'scaled amounts must be exact integers')
assert(pageSizeDefault <= pageSizeMax)
