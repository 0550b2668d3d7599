import { Context, Data, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import type { UserId } from "../domain/User.ts"
import { Auth } from "./Auth.ts"

/** Every tool the MCP endpoint offers, in the order tools/list shows them. */
export const mcpToolNames = [
  "search",
  "list_sources",
  "list_agents",
  "get_document",
  "get_entity",
  "timeline",
  "explore",
  "ask",
  "add_memory",
  "job_status"
] as const
export type McpToolName = typeof mcpToolNames[number]

/** Tools that write; a source allows them only with allow_writes. */
export const writeTools: ReadonlySet<McpToolName> = new Set(["add_memory"])

export interface McpSettings {
  readonly enabled: boolean
  readonly tools: ReadonlyArray<McpToolName>
  readonly allowWrites: boolean
  readonly updatedAt: Date | null
}

/** A source nobody configured: reachable by its owner's access token, every tool, read-only. */
export const defaultMcpSettings: McpSettings = { enabled: true, tools: mcpToolNames, allowWrites: false, updatedAt: null }

export interface McpTokenInfo {
  readonly id: string
  readonly name: string
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

/**
 * Who calls the MCP endpoint. `user`: the owner's access token, every MCP-enabled source of theirs. `source`: an
 * MCP token, exactly its source, with that source's tools and write permission.
 */
export type McpCaller =
  | { readonly _tag: "user"; readonly owner: UserId }
  | {
    readonly _tag: "source"
    readonly owner: UserId
    readonly sourceId: string
    readonly tokenId: string
    readonly tools: ReadonlyArray<McpToolName>
    readonly allowWrites: boolean
  }

export class McpAccessDenied extends Data.TaggedError("McpAccessDenied")<{
  readonly reason: "token_missing" | "token_invalid" | "mcp_disabled"
  readonly message: string
}> {}

export class McpSourceNotFound extends Data.TaggedError("McpSourceNotFound")<{ readonly sourceId: string }> {}
export class McpTokenNotFound extends Data.TaggedError("McpTokenNotFound")<{ readonly tokenId: string }> {}

/** MCP tokens start with this, so that they are told apart from access tokens (and found by secret scanners). */
const tokenPrefix = "engram_mcp_"
const digest = (secret: string) => createHash("sha256").update(secret).digest("hex")

interface SettingsRow {
  readonly enabled: boolean
  readonly tools: ReadonlyArray<string>
  readonly allow_writes: boolean
  readonly updated_at: Date
}

const fromRow = (row: SettingsRow | undefined): McpSettings =>
  row === undefined ? defaultMcpSettings : {
    enabled: row.enabled,
    // Kept in the catalogue's order; a name no longer offered is dropped.
    tools: mcpToolNames.filter((name) => row.tools.includes(name)),
    allowWrites: row.allow_writes,
    updatedAt: row.updated_at
  }

/**
 * Per-source MCP configuration and tokens, and the caller behind a bearer credential. Every operation on a source
 * checks that the owner owns it (McpSourceNotFound otherwise, as for a source that does not exist).
 */
export class McpAccess extends Context.Service<McpAccess, {
  readonly settings: (owner: UserId, sourceId: string) => Effect.Effect<McpSettings, McpSourceNotFound>
  readonly configure: (
    owner: UserId,
    sourceId: string,
    settings: Pick<McpSettings, "enabled" | "tools" | "allowWrites">
  ) => Effect.Effect<McpSettings, McpSourceNotFound>
  readonly tokens: (owner: UserId, sourceId: string) => Effect.Effect<ReadonlyArray<McpTokenInfo>, McpSourceNotFound>
  /** A new token; its secret is returned here and never again. */
  readonly issue: (
    owner: UserId,
    sourceId: string,
    name: string
  ) => Effect.Effect<McpTokenInfo & { readonly secret: string }, McpSourceNotFound>
  readonly revoke: (owner: UserId, sourceId: string, tokenId: string) => Effect.Effect<
    void,
    McpSourceNotFound | McpTokenNotFound
  >
  /** The caller a bearer credential stands for: an MCP token, else a user's access token. */
  readonly authenticate: (credential: Redacted.Redacted<string>) => Effect.Effect<McpCaller, McpAccessDenied>
  /** The sources a caller may reach: the token's source, or the owner's sources with MCP enabled. */
  readonly reachable: (caller: McpCaller) => Effect.Effect<ReadonlyArray<string>>
  /** Whether a write may go to this source (its settings allow writes). */
  readonly writable: (caller: McpCaller, sourceId: string) => Effect.Effect<boolean>
}>()("engram/McpAccess") {
  static readonly layer = Layer.effect(
    McpAccess,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const auth = yield* Auth

      const owned = (owner: UserId, sourceId: string) =>
        sql<{ id: string }>`SELECT id FROM sources WHERE id = ${sourceId} AND owner_id = ${owner}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows.length === 0 ? Effect.fail(new McpSourceNotFound({ sourceId })) : Effect.void
          )
        )

      const load = (sourceId: string) =>
        sql<SettingsRow>`SELECT enabled, tools, allow_writes, updated_at FROM source_mcp WHERE source_id = ${sourceId}`
          .pipe(Effect.orDie, Effect.map(([row]) => fromRow(row)))

      const settings = Effect.fn("McpAccess.settings")(function*(owner: UserId, sourceId: string) {
        yield* owned(owner, sourceId)
        return yield* load(sourceId)
      })

      const configure = Effect.fn("McpAccess.configure")(function*(
        owner: UserId,
        sourceId: string,
        input: Pick<McpSettings, "enabled" | "tools" | "allowWrites">
      ) {
        yield* owned(owner, sourceId)
        const tools = JSON.stringify(mcpToolNames.filter((name) => input.tools.includes(name)))
        yield* sql`
          INSERT INTO source_mcp (source_id, enabled, tools, allow_writes, updated_at)
          VALUES (${sourceId}, ${input.enabled}, ${tools}::jsonb, ${input.allowWrites}, now())
          ON CONFLICT (source_id) DO UPDATE SET enabled = EXCLUDED.enabled, tools = EXCLUDED.tools,
            allow_writes = EXCLUDED.allow_writes, updated_at = now()`.pipe(Effect.orDie)
        return yield* load(sourceId)
      })

      const tokenInfo = (row: { id: string; name: string; created_at: Date; last_used_at: Date | null }) => ({
        id: row.id,
        name: row.name,
        createdAt: row.created_at,
        lastUsedAt: row.last_used_at
      })

      const tokens = Effect.fn("McpAccess.tokens")(function*(owner: UserId, sourceId: string) {
        yield* owned(owner, sourceId)
        const rows = yield* sql<{ id: string; name: string; created_at: Date; last_used_at: Date | null }>`
          SELECT id, name, created_at, last_used_at FROM mcp_tokens WHERE source_id = ${sourceId}
          ORDER BY created_at, id`.pipe(Effect.orDie)
        return rows.map(tokenInfo)
      })

      const issue = Effect.fn("McpAccess.issue")(function*(owner: UserId, sourceId: string, name: string) {
        yield* owned(owner, sourceId)
        const secret = tokenPrefix + randomBytes(32).toString("base64url")
        const [row] = yield* sql<{ id: string; name: string; created_at: Date; last_used_at: Date | null }>`
          INSERT INTO mcp_tokens (source_id, name, secret_sha256) VALUES (${sourceId}, ${name}, ${digest(secret)})
          RETURNING id, name, created_at, last_used_at`.pipe(Effect.orDie)
        yield* Effect.logInfo("mcp token issued").pipe(
          Effect.annotateLogs({ source_id: sourceId, token_id: row!.id })
        )
        return { ...tokenInfo(row!), secret }
      })

      const revoke = Effect.fn("McpAccess.revoke")(function*(owner: UserId, sourceId: string, tokenId: string) {
        yield* owned(owner, sourceId)
        const rows = yield* sql<{ id: string }>`
          DELETE FROM mcp_tokens WHERE id = ${tokenId} AND source_id = ${sourceId} RETURNING id`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* new McpTokenNotFound({ tokenId })
        yield* Effect.logInfo("mcp token revoked").pipe(Effect.annotateLogs({ source_id: sourceId, token_id: tokenId }))
      })

      const authenticate = Effect.fn("McpAccess.authenticate")(function*(credential: Redacted.Redacted<string>) {
        const raw = Redacted.value(credential)
        if (raw === "") {
          return yield* new McpAccessDenied({ reason: "token_missing", message: "Send Authorization: Bearer <token>" })
        }
        if (raw.startsWith(tokenPrefix)) {
          const [row] = yield* sql<SettingsRow & {
            id: string
            source_id: string
            owner_id: UserId
            stale: boolean
            configured: boolean
          }>`
            SELECT t.id, t.source_id, s.owner_id, m.enabled, m.tools, m.allow_writes, m.updated_at,
              m.source_id IS NOT NULL AS configured,
              t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute' AS stale
            FROM mcp_tokens t
            JOIN sources s ON s.id = t.source_id
            LEFT JOIN source_mcp m ON m.source_id = t.source_id
            WHERE t.secret_sha256 = ${digest(raw)}`.pipe(Effect.orDie)
          if (row === undefined) {
            return yield* new McpAccessDenied({ reason: "token_invalid", message: "The MCP token is not valid" })
          }
          // Kept to the minute: a write per request would cost every tool call a transaction.
          if (row.stale) yield* sql`UPDATE mcp_tokens SET last_used_at = now() WHERE id = ${row.id}`.pipe(Effect.orDie)
          const settings = fromRow(row.configured ? row : undefined)
          if (!settings.enabled) {
            return yield* new McpAccessDenied({
              reason: "mcp_disabled",
              message: "MCP access is disabled for this token's source"
            })
          }
          return {
            _tag: "source",
            owner: row.owner_id,
            sourceId: row.source_id,
            tokenId: row.id,
            tools: settings.tools,
            allowWrites: settings.allowWrites
          } satisfies McpCaller
        }
        const user = yield* auth.authenticate(credential).pipe(
          Effect.mapError((error) => new McpAccessDenied({ reason: "token_invalid", message: error.message }))
        )
        return { _tag: "user", owner: user.id } satisfies McpCaller
      })

      const reachable = (caller: McpCaller) =>
        caller._tag === "source"
          ? Effect.succeed([caller.sourceId])
          : sql<{ id: string }>`
              SELECT s.id FROM sources s LEFT JOIN source_mcp m ON m.source_id = s.id
              WHERE s.owner_id = ${caller.owner} AND coalesce(m.enabled, true)
              ORDER BY s.created_at, s.id`.pipe(Effect.orDie, Effect.map((rows) => rows.map((row) => row.id)))

      const writable = (caller: McpCaller, sourceId: string) =>
        caller._tag === "source"
          ? Effect.succeed(caller.sourceId === sourceId && caller.allowWrites)
          : load(sourceId).pipe(Effect.map((settings) => settings.enabled && settings.allowWrites))

      return McpAccess.of({ settings, configure, tokens, issue, revoke, authenticate, reachable, writable })
    })
  )
}
