import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Per source and term, the largest term frequency and the shortest chunk among its postings: together they bound
 * what the term can add to any chunk's BM25 score, which lets search skip the postings of terms that cannot change
 * the top k. Bounds only ever widen (a removed chunk leaves them as they were), so they stay safe.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE lexical_terms ADD COLUMN max_tf integer, ADD COLUMN min_len integer`
  yield* sql`
    UPDATE lexical_terms l SET max_tf = b.max_tf, min_len = b.min_len
    FROM (
      SELECT source_id, term, max(tf) AS max_tf, min(len) AS min_len FROM chunk_terms GROUP BY source_id, term
    ) b
    WHERE b.source_id = l.source_id AND b.term = l.term`
  // A term row without postings bounds nothing; the widest values keep it safe all the same.
  yield* sql`UPDATE lexical_terms SET max_tf = 2147483647, min_len = 1 WHERE max_tf IS NULL`
  yield* sql`ALTER TABLE lexical_terms ALTER COLUMN max_tf SET NOT NULL, ALTER COLUMN min_len SET NOT NULL`
  // Point lookups of a chunk's postings for a few terms (the terms whose postings search skips).
  yield* sql`CREATE INDEX chunk_terms_chunk_term ON chunk_terms (chunk_id, term) INCLUDE (tf, len)`
  yield* sql`DROP INDEX chunk_terms_chunk`
})
