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
/** Largest absolute amount: scaled by 10^4 it stays an exact double (2^53 ≈ 9.007e15). */
export const amountAbsMax = 100_000_000_000

assert(requestBodyBytesMax >= batchItemsMax * 1024, 'body limit must hold a full batch of 1 KiB items')
assert(amountAbsMax * 10_000 < Number.MAX_SAFE_INTEGER, 'scaled amounts must be exact integers')
assert(pageSizeDefault <= pageSizeMax)
