import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * BM25 postings packed per source and term, read by search in a few rows and scored in the service (see
 * `LexicalIndex`). A chunk gets a new number each time it enters search; a segment holds, per posting, the chunk's
 * number (int4), the term's frequency (int2: a tsvector keeps at most 255 positions per lexeme) and the chunk's
 * length (int4), big-endian. The segments of the chunks searchable now are built from the postings table. The score
 * bounds of the pruning in SQL this replaces are dropped, and so is the postings table's index by term.
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
  yield* sql`
    UPDATE chunks c SET no = nextval('chunk_numbers')
    FROM documents d WHERE d.id = c.document_id AND d.active_version = c.version AND d.status = 'ready'`
  yield* sql`
    INSERT INTO lexical_segments (source_id, term, postings, packed)
    SELECT p.source_id, p.term, count(*),
      string_agg(int4send(c.no) || int2send(p.tf::int2) || int4send(p.len), ''::bytea ORDER BY c.no)
    FROM chunk_terms p JOIN chunks c ON c.id = p.chunk_id AND c.no IS NOT NULL
    GROUP BY p.source_id, p.term`
  yield* sql`ALTER TABLE lexical_terms DROP COLUMN max_tf, DROP COLUMN min_len`
  // Search no longer reads the postings table by term.
  yield* sql`DROP INDEX chunk_terms_scoring`
})
