/**
 * The V8 heap of every thread of another Node.js process (the main thread and each worker), read
 * through its inspector: RSS alone does not say which thread holds the memory, nor whether it is
 * live data or garbage an idle thread never collected. SIGUSR1 opens the inspector (as bench/gc.ts
 * does); the NodeWorker domain reaches the workers. With `collect`, each thread runs two full
 * collections before it is read. The inspector is closed again afterwards.
 * @module
 */
import WebSocket from 'ws'

const inspectorUrl = 'http://127.0.0.1:9229/json/list'

/** One thread's heap, MiB. */
export interface ThreadHeap {
  readonly thread: string
  /** Live objects (and garbage not yet collected). */
  readonly usedMiB: number
  /** What the heap holds from the system (used plus free room in its pages). */
  readonly totalMiB: number
  /** ArrayBuffers and SharedArrayBuffers this thread references (shared ones count in each). */
  readonly arrayBuffersMiB: number
}

interface Reply {
  readonly id?: number
  readonly method?: string
  readonly params?: { sessionId?: string; workerInfo?: { title: string }; message?: string }
  readonly result?: { result?: { value?: string } }
}

const heapExpression = `(() => {
  const heap = process.getBuiltinModule('node:v8').getHeapStatistics()
  const arrayBuffers = process.memoryUsage().arrayBuffers
  return JSON.stringify({ used: heap.used_heap_size, total: heap.total_heap_size, arrayBuffers })
})()`

async function debuggerUrl(pid: number): Promise<string> {
  process.kill(pid, 'SIGUSR1')
  const deadline = Date.now() + 5_000
  for (;;) {
    const targets = await fetch(inspectorUrl)
      .then((answer) => answer.json() as Promise<{ webSocketDebuggerUrl: string }[]>)
      .catch(() => null)
    if (targets !== null && targets.length > 0) return targets[0]!.webSocketDebuggerUrl
    if (Date.now() > deadline) throw new Error(`process ${pid} did not open its inspector on 127.0.0.1:9229`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function threadHeaps(pid: number, collect: boolean): Promise<ThreadHeap[]> {
  const socket = new WebSocket(await debuggerUrl(pid))
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  let next = 0
  const waiting = new Map<number, (reply: Reply) => void>()
  const workers: { title: string; sessionId: string }[] = []
  socket.on('message', (data: WebSocket.RawData) => {
    const reply = JSON.parse(data.toString()) as Reply
    if (reply.method === 'NodeWorker.attachedToWorker') {
      workers.push({ title: reply.params!.workerInfo!.title, sessionId: reply.params!.sessionId! })
    }
    // A worker's answers come wrapped in an event of the main thread's session.
    const inner =
      reply.method === 'NodeWorker.receivedMessageFromWorker' ? (JSON.parse(reply.params!.message!) as Reply) : reply
    if (inner.id !== undefined) waiting.get(inner.id)?.(inner)
  })
  const send = (method: string, params: object, sessionId: string | null): Promise<Reply> =>
    new Promise((resolve) => {
      const id = ++next
      waiting.set(id, resolve)
      const message = JSON.stringify({ id, method, params })
      if (sessionId === null) socket.send(message)
      else
        socket.send(
          JSON.stringify({ id: ++next, method: 'NodeWorker.sendMessageToWorker', params: { sessionId, message } }),
        )
    })
  try {
    await send('NodeWorker.enable', { waitForDebuggerOnStart: false }, null)
    // Attachments are announced as events right after enabling.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const threads = [{ title: 'main', sessionId: null }, ...workers]
    // Every thread first, then the readings: a worker's collection can free shared buffers that
    // the main thread's figure counts.
    for (const { sessionId } of collect ? [...threads, ...threads] : []) {
      await send('HeapProfiler.enable', {}, sessionId)
      await send('HeapProfiler.collectGarbage', {}, sessionId)
      await send('HeapProfiler.collectGarbage', {}, sessionId)
      await send('HeapProfiler.disable', {}, sessionId)
    }
    const heaps: ThreadHeap[] = []
    for (const { title, sessionId } of threads) {
      const reply = await send('Runtime.evaluate', { expression: heapExpression }, sessionId)
      const read = JSON.parse(reply.result!.result!.value!) as { used: number; total: number; arrayBuffers: number }
      const mib = (bytes: number): number => bytes / 2 ** 20
      heaps.push({
        thread: title,
        usedMiB: mib(read.used),
        totalMiB: mib(read.total),
        arrayBuffersMiB: mib(read.arrayBuffers),
      })
    }
    await send('NodeWorker.disable', {}, null)
    return heaps
  } finally {
    // As bench/gc.ts: the inspector closes once this connection is gone.
    socket.send(
      JSON.stringify({
        id: ++next,
        method: 'Runtime.evaluate',
        params: { expression: "setTimeout(() => process.getBuiltinModule('node:inspector').close(), 200), 0" },
      }),
    )
    socket.close()
    const deadline = Date.now() + 5_000
    while (
      await fetch(inspectorUrl).then(
        () => true,
        () => false,
      )
    ) {
      // biome-ignore lint/correctness/noUnsafeFinally: an inspector left open spoils every later run: it wins
      if (Date.now() > deadline) throw new Error(`process ${pid} kept its inspector open`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

export function formatThreadHeaps(heaps: readonly ThreadHeap[]): string {
  return heaps
    .map(
      (heap) =>
        `${heap.thread}: used ${heap.usedMiB.toFixed(0)} of ${heap.totalMiB.toFixed(0)} MiB` +
        ` (array buffers ${heap.arrayBuffersMiB.toFixed(0)})`,
    )
    .join('; ')
}
