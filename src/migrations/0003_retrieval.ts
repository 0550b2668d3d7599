import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chunks ADD COLUMN lexeme_count integer NOT NULL DEFAULT 0`
  yield* sql`
    CREATE TABLE chunk_terms (
      term text NOT NULL,
      chunk_id text NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
      tf integer NOT NULL,
      PRIMARY KEY (term, chunk_id)
    )`
  yield* sql`CREATE INDEX chunk_terms_chunk ON chunk_terms (chunk_id)`
  yield* sql`
    CREATE TABLE lexical_stats (
      source_id text PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
      chunk_count bigint NOT NULL,
      total_length bigint NOT NULL
    )`
  yield* sql`
    CREATE TABLE lexical_terms (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      term text NOT NULL,
      df integer NOT NULL,
      PRIMARY KEY (source_id, term)
    )`
  yield* sql`
    CREATE TABLE explorations (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      query text NOT NULL,
      strategy text NOT NULL,
      source_ids jsonb NOT NULL,
      results jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX explorations_owner ON explorations (owner_id, created_at DESC, id DESC)`
})
