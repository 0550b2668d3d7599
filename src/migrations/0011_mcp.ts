import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * MCP access per source: whether it is reachable over /mcp/, which tools, whether add_memory may write; and the
 * source's MCP tokens, stored as SHA-256 digests of their secrets (the secret is shown once).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE source_mcp (
      source_id text PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
      enabled boolean NOT NULL,
      tools jsonb NOT NULL,
      allow_writes boolean NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE mcp_tokens (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      name text NOT NULL,
      secret_sha256 text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz
    )`
  yield* sql`CREATE INDEX mcp_tokens_source ON mcp_tokens (source_id, created_at, id)`
})
