/**
 * Headers of every portal and console page (issue 9): a content security policy without inline
 * script or style (scripts and styles come from the service's own `/assets/`), no framing, no
 * content-type sniffing, no referrer beyond the origin, and no caching of pages that show a
 * person's data.
 * @module
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ')

export const pageHeaders: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': contentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}
