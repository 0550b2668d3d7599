import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * BM25 postings carry what scoring needs (the chunk's source and length), and one covering index serves the
 * scoring scan by term and source without visiting chunks, documents or, once vacuumed, the table itself.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chunk_terms ADD COLUMN source_id text, ADD COLUMN len integer`
  yield* sql`
    UPDATE chunk_terms t SET source_id = c.source_id, len = c.lexeme_count
    FROM chunks c WHERE c.id = t.chunk_id`
  yield* sql`ALTER TABLE chunk_terms ALTER COLUMN source_id SET NOT NULL, ALTER COLUMN len SET NOT NULL`
  yield* sql`ALTER TABLE chunk_terms DROP CONSTRAINT chunk_terms_pkey`
  yield* sql`CREATE INDEX chunk_terms_scoring ON chunk_terms (term, source_id) INCLUDE (chunk_id, tf, len)`
})
