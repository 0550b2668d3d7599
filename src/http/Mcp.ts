import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { httpError, NotFound } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { EngramConfig } from "../config.ts"
import { mcpPath, publicBase } from "../mcp/Endpoint.ts"
import { McpAccess, type McpSettings, type McpTokenInfo } from "../services/McpAccess.ts"
import { AuthenticationLive } from "./Authentication.ts"

const tokenOut = (token: McpTokenInfo) => ({
  id: token.id,
  name: token.name,
  created_at: token.createdAt.toISOString(),
  last_used_at: token.lastUsedAt?.toISOString() ?? null
})

/** Client configuration to paste, for the clients users ask about most; `<token>` stands for a token's secret. */
const clientSnippets = (endpoint: string, name: string) => ({
  claude_desktop: {
    mcpServers: {
      [name]: { command: "npx", args: ["-y", "mcp-remote", endpoint, "--header", "Authorization:Bearer <token>"] }
    }
  },
  cursor: { mcpServers: { [name]: { url: endpoint, headers: { Authorization: "Bearer <token>" } } } },
  vscode: {
    servers: { [name]: { type: "http", url: endpoint, headers: { Authorization: "Bearer ${input:engram-token}" } } },
    inputs: [{ type: "promptString", id: "engram-token", description: "Engram MCP token (<token>)", password: true }]
  }
})

const notFound = () => httpError(NotFound, "source_not_found", "No such source")

export const McpConfigHandlers = HttpApiBuilder.group(
  Api,
  "mcp",
  Effect.fn(function*(handlers) {
    const access = yield* McpAccess
    const { publicUrl } = yield* EngramConfig

    const describe = (sourceId: string, settings: McpSettings, tokens: ReadonlyArray<McpTokenInfo>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const endpoint = `${publicBase(publicUrl, request)}${mcpPath}`
        return {
          source_id: sourceId,
          enabled: settings.enabled,
          tools: settings.tools,
          allow_writes: settings.allowWrites,
          endpoint,
          tokens: tokens.map(tokenOut),
          clients: clientSnippets(endpoint, "engram"),
          updated_at: settings.updatedAt?.toISOString() ?? null
        }
      })

    return handlers
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const settings = yield* access.settings(user.id, params.source_id)
          return yield* describe(params.source_id, settings, yield* access.tokens(user.id, params.source_id))
        }).pipe(Effect.catchTag("McpSourceNotFound", () => Effect.fail(notFound()))))
      .handle("configure", ({ params, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const settings = yield* access.configure(user.id, params.source_id, {
            enabled: payload.enabled,
            tools: payload.tools,
            allowWrites: payload.allow_writes
          })
          return yield* describe(params.source_id, settings, yield* access.tokens(user.id, params.source_id))
        }).pipe(Effect.catchTag("McpSourceNotFound", () => Effect.fail(notFound()))))
      .handle("issue", ({ params, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const token = yield* access.issue(user.id, params.source_id, payload.name)
          return { ...tokenOut(token), secret: token.secret }
        }).pipe(Effect.catchTag("McpSourceNotFound", () => Effect.fail(notFound()))))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          yield* access.revoke(user.id, params.source_id, params.token_id)
        }).pipe(
          Effect.catchTag("McpSourceNotFound", () => Effect.fail(notFound())),
          Effect.catchTag("McpTokenNotFound", () => Effect.fail(httpError(NotFound, "token_not_found", "No such token")))
        ))
  })
).pipe(Layer.provide(AuthenticationLive))
