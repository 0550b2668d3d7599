import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { packedAggregate } from "../stores/packedPostings.ts"

/**
 * BM25 postings packed per source and term (`stores/packedPostings.ts`), read by search in a few rows and scored in
 * the service (`LexicalIndex`). A chunk gets a new number each time it enters search. The segments of the chunks
 * searchable now are built from the postings table. The score bounds of the pruning in SQL this replaces are
 * dropped, and so is the postings table's index by term.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE SEQUENCE chunk_numbers AS integer`
  yield* sql`ALTER TABLE chunks ADD COLUMN no integer`
  yield* sql`CREATE UNIQUE INDEX chunks_no ON chunks (no)`
  yield* sql`
    CREATE TABLE lexical_segments (
      id bigserial PRIMARY KEY,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      term text NOT NULL,
      postings integer NOT NULL,
      packed bytea NOT NULL
    )`
  yield* sql`CREATE INDEX lexical_segments_term ON lexical_segments (term, source_id)`
  // Numbers that left search: their postings stay in segments until the term's next merge drops them.
  yield* sql`
    CREATE TABLE lexical_dead (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      no integer NOT NULL,
      PRIMARY KEY (source_id, no)
    )`
  yield* sql`
    UPDATE chunks c SET no = nextval('chunk_numbers')
    FROM documents d WHERE d.id = c.document_id AND d.active_version = c.version AND d.status = 'ready'`
  yield* sql`
    INSERT INTO lexical_segments (source_id, term, postings, packed)
    SELECT source_id, term, count(*), ${packedAggregate(sql)}
    FROM (
      SELECT p.source_id, p.term, c.no, p.tf, p.len,
        c.no - lag(c.no, 1, 0) OVER (PARTITION BY p.source_id, p.term ORDER BY c.no) AS gap
      FROM chunk_terms p JOIN chunks c ON c.id = p.chunk_id AND c.no IS NOT NULL
    ) p
    GROUP BY source_id, term`
  yield* sql`ALTER TABLE lexical_terms DROP COLUMN max_tf, DROP COLUMN min_len`
  // Search no longer reads the postings table by term.
  yield* sql`DROP INDEX chunk_terms_scoring`
})
