/**
 * ioredis's `VerbatimString` (a RESP3 verbatim-string reply) without `extends String`.
 *
 * ioredis defines `class VerbatimString extends String`. Any object whose prototype is
 * `String.prototype` other than a String wrapper switches off one of V8's fast paths for the whole
 * process: msgpackr's encoding, on every write of the service, ran about 60% slower once ioredis
 * was loaded (found by bisecting ioredis's modules with a probe that packs price records; defining
 * such a class alone does it). The service never asks for verbatim strings (ioredis uses the class
 * only as a type-mapping marker for them), so ioredis gets this plain class instead: through the
 * module cache in a checkout (./ioredis-shim.ts) and by the bundler in the single executable
 * (binary/build.ts).
 * @module
 */
export class VerbatimString {
  constructor(
    readonly format: string,
    readonly value: string,
  ) {}

  toString(): string {
    return this.value
  }

  valueOf(): string {
    return this.value
  }
}
