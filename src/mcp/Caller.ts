import { Context } from "effect"
import type { McpCaller } from "../services/McpAccess.ts"

/** The caller of the current MCP request, set by the endpoint's authentication before any tool runs. */
export class McpCallerRef extends Context.Service<McpCallerRef, McpCaller>()("engram/McpCaller") {}
