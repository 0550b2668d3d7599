import { Effect, Layer, Option, Redacted } from "effect"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EngramConfig } from "../config.ts"
import { CurrentRequestId } from "../api/Errors.ts"
import { McpAccess } from "../services/McpAccess.ts"
import { engramVersion } from "../version.ts"
import { McpCallerRef } from "./Caller.ts"
import { EngramToolHandlers } from "./Handlers.ts"
import { EngramTools } from "./Tools.ts"

/** Where the MCP endpoint is served, relative to the server's address. */
export const mcpPath = "/api/v1/mcp/"
const metadataPath = "/.well-known/oauth-protected-resource"

/** The address clients reach this server at: ENGRAM_PUBLIC_URL, else the request's Host. */
export const publicBase = (publicUrl: Option.Option<string>, request: HttpServerRequest.HttpServerRequest) =>
  Option.match(publicUrl, {
    onSome: (url) => url.replace(/\/+$/, ""),
    onNone: () => `http://${request.headers["host"] ?? "127.0.0.1"}`
  })

/**
 * The caller of every request to the endpoint: `Authorization: Bearer` with an MCP token or an access token.
 * Without one, or with one that is not valid, 401 with a challenge naming the protected resource metadata
 * (RFC 9728), so a client can find out what this resource accepts.
 */
const Authenticated = HttpRouter.middleware<{ provides: McpCallerRef }>()(Effect.gen(function*() {
  const access = yield* McpAccess
  const { publicUrl } = yield* EngramConfig
  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const header = request.headers["authorization"] ?? ""
      const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1] ?? ""
      const caller = yield* access.authenticate(Redacted.make(bearer)).pipe(Effect.result)
      if (caller._tag === "Success") return yield* Effect.provideService(httpEffect, McpCallerRef, caller.success)
      const { reason, message } = caller.failure
      const requestId = yield* CurrentRequestId
      const status = reason === "mcp_disabled" ? 403 : 401
      const metadata = `${publicBase(publicUrl, request)}${metadataPath}${mcpPath.replace(/\/$/, "")}`
      const challenge = `Bearer resource_metadata="${metadata}"` +
        (reason === "token_missing" ? "" : `, error="${status === 403 ? "insufficient_scope" : "invalid_token"}"`)
      return HttpServerResponse.jsonUnsafe(
        { error: { code: reason, message, request_id: requestId } },
        { status, headers: { "www-authenticate": challenge } }
      )
    })
}))

/** A tool shows (and runs) for a source token only when its source's MCP settings enable it. */
const EnabledTools = McpServer.visibility(({ target }) =>
  Effect.gen(function*() {
    const caller = yield* McpCallerRef
    return caller._tag === "user" || caller.tools.some((name) => name === target)
  })
)

/**
 * The Protected Resource Metadata document (RFC 9728) of the MCP endpoint, at the well-known address and at its
 * path-suffixed form. No authorization server is listed: bearer tokens are issued by Engram itself (access tokens
 * from /auth/login, MCP tokens per source).
 */
const ResourceMetadata = Layer.unwrap(Effect.gen(function*() {
  const { publicUrl } = yield* EngramConfig
  const document = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return HttpServerResponse.jsonUnsafe({
      resource: `${publicBase(publicUrl, request)}${mcpPath}`,
      resource_name: "Engram knowledge tools (MCP)",
      bearer_methods_supported: ["header"],
      resource_documentation: `${publicBase(publicUrl, request)}/docs`
    }, { headers: { "cache-control": "no-store" } })
  })
  return Layer.mergeAll(
    HttpRouter.add("GET", metadataPath, document),
    HttpRouter.add("GET", `${metadataPath}/api/v1/mcp/`, document)
  )
}))

/**
 * The Streamable HTTP MCP endpoint: the stateless 2026-07-28 revision and the session revisions deployed clients
 * still speak (2025-11-25, 2025-06-18). Browsers may call it only from ENGRAM_CORS_ORIGINS.
 */
export const McpEndpoint = Layer.unwrap(Effect.gen(function*() {
  const { corsOrigins } = yield* EngramConfig
  const registrations = McpServer.toolkit(EngramTools).pipe(
    Layer.provide(EnabledTools.layer),
    Layer.provide(EngramToolHandlers)
  )
  return McpServer.layerHttp({
    name: "engram",
    version: engramVersion,
    description: "Search and explore a user's knowledge stored in Engram",
    instructions: "Use `search` to find passages about anything the user has stored, `get_entity` and `timeline` " +
      "for people, places and what happened when, and `ask` for a cited answer from one of the user's agents.",
    path: mcpPath,
    protocols: [McpProtocol.v2026_07_28, McpProtocol.v2025_11_25, McpProtocol.v2025_06_18],
    allowedOrigins: corsOrigins,
    allowSessionTermination: true,
    registrations
  })
})).pipe(Layer.provide(Authenticated.layer), Layer.merge(ResourceMetadata))
