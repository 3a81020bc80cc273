import t from 'tap'
import { loadNativeUws } from '../server/http.js'

t.test('the native uWebSockets.js binary loads for this Node ABI', async (t) => {
  const uws = loadNativeUws()
  t.type(uws.App, 'function')
  t.type(uws.us_socket_local_port, 'function', 'a native-only export is present')
})

t.test('a missing native binary stops start-up with a clear message instead of a JS fallback', async (t) => {
  t.throws(() => loadNativeUws('999'), /native uWebSockets\.js binary did not load .*uws_\w+_\w+_999\.node.*refuses the slow JavaScript fallback/s)
})
