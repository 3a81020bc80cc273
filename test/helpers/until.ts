/** Polls `condition` every 10 ms until it holds; answers how long that took, or throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs: number, what = 'the condition'): Promise<number> {
  const started = Date.now()
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return Date.now() - started
}
