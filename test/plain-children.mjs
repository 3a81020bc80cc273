// Loaded by test/run.mjs into every test process (tap's --node-arg=--import), after tap's own
// process tracker (@tapjs/processinfo). That tracker puts its module loader into the NODE_OPTIONS
// of every process a test starts: each server, CLI call and worker thread then loads its modules
// through the loader's hooks (off the main thread on Node.js 22), which made a child's start about
// three times slower (a bare `node -e 1`: 300 ms against 110) and slowed every server start of
// every suite. The runner collects no coverage through the tracker (it is off; coverage comes from
// NODE_V8_COVERAGE, which children still inherit), so the processes a test starts run without it.

/** Whether a NODE_OPTIONS word is the tracker's loader. */
const isTracker = (word) => word.includes('@tapjs/processinfo')

/** NODE_OPTIONS without the tracker's loader (undefined when nothing else is left). */
function withoutTracker(options) {
  if (options === undefined) return undefined
  const kept = options.split(/\s+/).filter((word) => word !== '' && !isTracker(word.replaceAll('"', '')))
  return kept.length === 0 ? undefined : kept.join(' ')
}

/** The environment a child starts with: no tracker loader, none of the tracker's variables. */
function plainEnv(env) {
  const plain = {}
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('_TAPJS_PROCESSINFO_')) continue
    if (name === 'NODE_OPTIONS') {
      const kept = withoutTracker(value)
      if (kept !== undefined) plain[name] = kept
      continue
    }
    plain[name] = value
  }
  return plain
}

// The tracker rewrites each child's environment in a spawn listener (process-on-spawn, a global
// registry): a last listener takes its changes out again.
const registry = globalThis[Symbol.for('process-on-spawn@*:singletonId')]
if (registry !== undefined) {
  registry.listeners.push((spawned) => {
    spawned.env = plainEnv(spawned.env)
  })
}
