import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { IdText, trimmedTextOf } from "../domain/Text.ts"
import { mcpToolNames } from "../services/McpAccess.ts"
import { NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const Params = { source_id: IdText }

export const McpToolName = Schema.Literals(mcpToolNames).annotate({ identifier: "McpToolName" })

export const McpTokenOut = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "McpTokenOut", description: "A token as listed: never its secret" })

export const McpConfigOut = Schema.Struct({
  source_id: Schema.String,
  enabled: Schema.Boolean.annotate({ description: "Whether the source is reachable over MCP at all" }),
  tools: Schema.Array(McpToolName).annotate({ description: "The tools a token of this source sees and may call" }),
  allow_writes: Schema.Boolean.annotate({ description: "Whether add_memory may store into this source" }),
  endpoint: Schema.String.annotate({ description: "The Streamable HTTP endpoint's URL" }),
  tokens: Schema.Array(McpTokenOut),
  clients: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "Ready-to-paste client configuration (claude_desktop, cursor, vscode); put a token of this source " +
      "where it says <token>"
  }),
  updated_at: Schema.NullOr(Schema.String).annotate({ description: "null until the settings are first changed" })
}).annotate({ identifier: "McpConfigOut" })

export const McpConfigUpdate = Schema.Struct({
  enabled: Schema.Boolean,
  tools: Schema.Array(McpToolName).check(Schema.isMaxLength(mcpToolNames.length)),
  allow_writes: Schema.Boolean
}).annotate({ identifier: "McpConfigUpdate" })

export const McpTokenCreate = Schema.Struct({ name: trimmedTextOf(1, 100) }).annotate({ identifier: "McpTokenCreate" })

export const McpTokenCreated = Schema.Struct({
  ...McpTokenOut.fields,
  secret: Schema.String.annotate({ description: "The bearer token; shown this once, stored only as a digest" })
}).annotate({ identifier: "McpTokenCreated" })

export class McpConfigApi extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.get("get", "/:source_id/mcp", { params: Params, success: McpConfigOut, error: NotFound })
      .annotateMerge(OpenApi.annotations({
        summary: "The source's MCP configuration",
        description: "Whether AI clients may reach the source over the MCP endpoint (POST/GET/DELETE /api/v1/mcp/), " +
          "which tools, whether writes are allowed, its tokens and client snippets. Defaults: enabled, every tool, " +
          "no writes."
      })),
    HttpApiEndpoint.put("configure", "/:source_id/mcp", {
      params: Params,
      payload: McpConfigUpdate,
      success: McpConfigOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Configure the source's MCP access",
      description: "Applies at once: disabled tools vanish from tools/list of the source's tokens and fail when " +
        "called; a disabled source answers its tokens 403 and leaves the owner's MCP connections."
    })),
    HttpApiEndpoint.post("issue", "/:source_id/mcp/tokens", {
      params: Params,
      payload: McpTokenCreate,
      success: McpTokenCreated.pipe(HttpApiSchema.status(201)),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Issue an MCP token for the source",
      description: "The token sees exactly this source: list_sources shows it alone and any other id behaves as " +
        "missing. The secret is in this response only."
    })),
    HttpApiEndpoint.delete("revoke", "/:source_id/mcp/tokens/:token_id", {
      params: { source_id: IdText, token_id: IdText },
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Revoke an MCP token",
      description: "At once: its next request gets 401."
    }))
  )
  .middleware(Authentication)
  .prefix("/sources")
  .annotateMerge(OpenApi.annotations({
    title: "MCP configuration",
    description: "Per-source access for AI clients over the MCP endpoint"
  }))
{}
