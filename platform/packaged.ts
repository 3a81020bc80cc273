/**
 * The single executable (issue 10, `npm run build:binary`): when the service runs as one binary, its
 * entry (binary/main.ts) installs this runtime before anything else loads, and the few places that
 * read files beside the code ask it instead: the native addons, the worker scripts and the pages'
 * assets. From a checkout it is absent and they read their files as always.
 * @module
 */

export interface PackagedRuntime {
  /** The bytes of an embedded file (e.g. `web/app.css`, `uws_linux_x64_127.node`). */
  bytes(name: string): Buffer
  /**
   * An embedded file on disk, for what must be loaded from a path (native addons, worker scripts):
   * written once into a private folder of the user and verified by its hash; answers the path.
   */
  file(name: string): string
  /** An embedded native addon, loaded from `file(name)`. */
  addon(name: string): unknown
}

const key = '__pricingPackaged'

/** The runtime of the single executable, or null when running from a checkout. */
export function packaged(): PackagedRuntime | null {
  return ((globalThis as Record<string, unknown>)[key] as PackagedRuntime | undefined) ?? null
}

export function installPackaged(runtime: PackagedRuntime): void {
  ;(globalThis as Record<string, unknown>)[key] = runtime
}
