/**
 * The operator's token-signing keys (docs/api.md "Signing keys"; docs/security.md "Key rotation"):
 * the keys held, and a rotation. Admin token, as every `/admin/*` route.
 * @module
 */
import type { RootRoute } from '../contracts.js'
import { parseJsonBody } from '../request-body.js'
import { Type } from '@sinclair/typebox'
import { publicSigningKeys } from '../../accounts/signing-keys.js'
import { validate } from '../validate.js'
import { adminOnly } from './admin.js'

const Instant = Type.String({ format: 'date-time' })
const SigningKeyAnswer = Type.Object({
  kid: Type.String({ description: "the key's id: the `kid` of its tokens and of its JWKS entry" }),
  alg: Type.String(),
  created_at: Instant,
  status: Type.Union([Type.Literal('signing'), Type.Literal('verifying')], {
    description:
      'signing: new tokens are signed with it (on this node); verifying: only tokens it signed before are checked with it',
  }),
  drops_at: Type.Union([Instant, Type.Null()], {
    description:
      'when it leaves the JWKS and its private key is deleted: its last token has expired then; null for the newest key',
  }),
  encrypted: Type.Boolean({ description: 'its private key is stored encrypted with PRICING_SECRET_KEY' }),
})
const SigningKeysAnswer = Type.Array(SigningKeyAnswer, { description: 'newest first' })
export const RotateSigningKeyBody = Type.Object(
  {
    drop_previous: Type.Optional(
      Type.Boolean({
        description:
          'drop every older key at once (a key thought stolen): the tokens they signed are refused from now on; default false',
      }),
    ),
  },
  { additionalProperties: false },
)

export function signingKeyRoutes(): RootRoute[] {
  return [
    adminOnly({
      method: 'GET',
      path: '/admin/signing-keys',
      operationId: 'listSigningKeys',
      response: SigningKeysAnswer,
      summary:
        'The token-signing keys held, newest first: the one that signs, and older ones kept until their last token has expired',
      handler: (context) => ({ status: 200, body: publicSigningKeys(context.deps.tokens.keys.states()) }),
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/signing-keys/rotate',
      operationId: 'rotateSigningKey',
      response: SigningKeysAnswer,
      errors: [409],
      body: RotateSigningKeyBody,
      summary:
        'A new token-signing key signs from now on; older keys stay in the JWKS until their last token has expired (930 s), or are dropped at once with drop_previous (409 when 10 keys are held)',
      handler: async (context) => {
        const body = validate<typeof RotateSigningKeyBody.static>(
          RotateSigningKeyBody,
          parseJsonBody(context.incoming) ?? {},
        )
        const states = await context.deps.tokens.rotate(context.nowMs, body.drop_previous === true)
        return { status: 200, body: publicSigningKeys(states) }
      },
    }),
  ]
}
