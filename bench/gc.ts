/**
 * A full garbage collection in another Node.js process, before a memory figure is read ("a GC may
 * run first", issue 12): RSS then counts what the data holds, not garbage V8 has not collected
 * yet. SIGUSR1 opens the process's inspector on 127.0.0.1:9229 (Node's default for the signal);
 * two `HeapProfiler.collectGarbage` calls over its WebSocket collect; then the process closes its
 * inspector again, so that nothing of it stays on while the bench measures afterwards.
 * @module
 */
import WebSocket from 'ws'

const inspectorUrl = 'http://127.0.0.1:9229/json/list'

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

export async function collectGarbage(pid: number): Promise<void> {
  const socket = new WebSocket(await debuggerUrl(pid))
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  let next = 0
  const call = (method: string, params: object = {}) =>
    new Promise<void>((resolve) => {
      const id = ++next
      const onMessage = (data: WebSocket.RawData) => {
        if ((JSON.parse(data.toString()) as { id?: number }).id !== id) return
        socket.off('message', onMessage)
        resolve()
      }
      socket.on('message', onMessage)
      socket.send(JSON.stringify({ id, method, params }))
    })
  await call('HeapProfiler.enable')
  // Twice: objects freed by the first (weak references, finalizers) go in the second.
  await call('HeapProfiler.collectGarbage')
  await call('HeapProfiler.collectGarbage')
  await call('HeapProfiler.disable')
  // An open inspector slows the server (measured: about 30% more CPU per 1,000-SKU query on the
  // workers), so it is closed again, once this connection is gone (`inspector.close` waits for
  // its connections to end).
  await call('Runtime.enable')
  await call('Runtime.evaluate', {
    expression: "setTimeout(() => process.getBuiltinModule('node:inspector').close(), 200), 0",
  })
  socket.close()
  const deadline = Date.now() + 5_000
  while (
    await fetch(inspectorUrl).then(
      () => true,
      () => false,
    )
  ) {
    if (Date.now() > deadline) throw new Error(`process ${pid} kept its inspector open`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
