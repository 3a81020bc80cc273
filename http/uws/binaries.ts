/**
 * The uWebSockets.js build this service runs on, and the sha256 of every native binary it ships.
 * The package is `@btc-vision/uwebsockets.js@20.57.0`, a republication of upstream uWebSockets.js
 * v20.57.0 (why it is trusted: docs/uws-binary.md). A binary whose hash is not listed here is never
 * loaded, so a tampered or swapped file in node_modules stops start-up instead of running.
 * @module
 */

export const uwsPackage = '@btc-vision/uwebsockets.js'
export const uwsVersion = '20.57.0'

/** Node.js release lines per module ABI (process.versions.modules) that the package has binaries for. */
export const supportedAbis: Readonly<Record<string, string>> = {
  '115': 'Node.js 20',
  '127': 'Node.js 22',
  '137': 'Node.js 24',
  '141': 'Node.js 25',
}

/** sha256 of each published binary, by file name (`uws_<platform>_<arch>_<abi>.node`). */
export const binarySha256: Readonly<Record<string, string>> = {
  'uws_darwin_arm64_115.node': 'e92644395ac8d37cb078098f843fb1b82e59701832f38fed00a9bdcfb87ba939',
  'uws_darwin_arm64_127.node': '6180345d453e2e113feb2b0d76376493cd6a90056c3483fc22de7b0c340dc231',
  'uws_darwin_arm64_137.node': '2187391c702fa7ad3bf685eff7712c15cf24fa7cf324a131dfcbae3fd0f20a9a',
  'uws_darwin_arm64_141.node': '8555586f69116620ac17540b2a7a2459c5db1cebee5c36fd77157dd352fabf82',
  'uws_darwin_x64_115.node': 'f661b97951ffdf54324e514becda0a2740f723c9fd3c7098e812a0e7714651ed',
  'uws_darwin_x64_127.node': 'fd551673f3ce1f104d7cec3ba8f628d9d04853eff1045c9d95983372ed90bca0',
  'uws_darwin_x64_137.node': '98fd7e9456e2d37d3262b05b053d673830927f91c63c0c2ae73bde8d19eef293',
  'uws_darwin_x64_141.node': 'e64e8a42347b5f9861b0f2bfa0981d8e48914e9b26ec73e133ba454d9a580777',
  'uws_linux_arm64_115.node': '6bdbc8ff976b4371af1906175e9025804bacc38a414969f4f02314e6b99f206c',
  'uws_linux_arm64_127.node': '82b79bd18d1e3563de336156005bd01b7f39fc387b65173d69a29da4ee79f895',
  'uws_linux_arm64_137.node': '88618b30ddf6b2b62310db89f40a701616676352aac5e0f6184dd8ef876199ce',
  'uws_linux_arm64_141.node': '81d0186dd1549ed6a7f47e68e323573fc27d69d2920527654ce2dd993af2b0ec',
  'uws_linux_x64_115.node': '5b126ee00bf754b02e97e4c27090365a8562c5820c93f93918ac2212d4503e91',
  'uws_linux_x64_127.node': '4b55b1f2cb7a7913febbb65a89496412b96af77e838552980092ba6b33723aac',
  'uws_linux_x64_137.node': '98128405dba2fb608448e921a979530f70c946a2cc9889c15f2fa70c2d00ab05',
  'uws_linux_x64_141.node': '813d788b347c6fd76b779d8932311ec05a044e612b4b83af220f16e6ea789683',
  'uws_win32_x64_115.node': '1ffbe9b09607fd9c90e98661383de2bd844b06d4f25ab502f3361d8d8fac559f',
  'uws_win32_x64_127.node': 'b4fa85dd015d6d32655f75e9d5b2480124b7649d9265a2b84d8dafe37f88f838',
  'uws_win32_x64_137.node': '84ae72d2149e6ffa2a44063344073599027b1ce8bffaab3957903f966b0c6bb9',
  'uws_win32_x64_141.node': '59346e454b89d2d0ed1609b7581683bb9fde7edaf3b3f04fe4f6fe03e34c8afd',
}
