import { Effect, Layer } from "effect"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { EngramConfig } from "../config.ts"

/**
 * ENGRAM_CORS_ORIGINS: empty → no CORS headers (same-origin only); `*` → any origin, never with credentials;
 * a list → exactly those origins, with credentials.
 */
export const CorsLive = Layer.unwrap(Effect.gen(function*() {
  const { corsOrigins } = yield* EngramConfig
  if (corsOrigins.length === 0) return Layer.empty
  const anyOrigin = corsOrigins.includes("*")
  return HttpRouter.middleware(
    HttpMiddleware.cors({
      allowedOrigins: anyOrigin ? [] : (origin: string) => corsOrigins.includes(origin),
      credentials: !anyOrigin,
      allowedHeaders: ["authorization", "content-type", "x-request-id"],
      exposedHeaders: ["x-request-id", "www-authenticate"],
      maxAge: 600
    }),
    { global: true }
  )
}))
