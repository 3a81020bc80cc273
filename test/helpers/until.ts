/** Polls `condition` every 10 ms until it holds; answers how long that took, or throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs: number, what = 'the condition'): Promise<number> {
  const started = Date.now()
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return Date.now() - started
}

/**
 * Calls `attempt` every 50 ms until it answers a value other than undefined (a request that must
 * eventually succeed); answers that value, or throws after `timeoutMs`.
 */
export async function eventually<T>(
  attempt: () => Promise<T | undefined>,
  timeoutMs: number,
  what = 'the answer',
): Promise<T> {
  const started = Date.now()
  for (;;) {
    const value = await attempt()
    if (value !== undefined) return value
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
