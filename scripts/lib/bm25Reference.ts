import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type Bm25Parameters, type LexicalHit, weightedTerms } from "../../src/stores/LexicalIndex.ts"

/**
 * Exhaustive BM25 in one SQL statement, the reference the service's search must equal: every posting of every query
 * term in the sources (from the postings table written with the chunks, not the packed segments; the terms' IDF as
 * search computes it), searchable chunks only, each term's weight in whole units of 2^-30 as `weightUnits` computes
 * it, best first, ties by chunk number.
 */
export const exhaustiveBm25 = (
  sql: SqlClient.SqlClient,
  query: string,
  sourceIds: ReadonlyArray<string>,
  limit: number,
  { k1, b }: Bm25Parameters
): Effect.Effect<ReadonlyArray<LexicalHit>> =>
  sql<{ id: string; score: number }>`
    WITH ${weightedTerms(sql, query, sql`${sql.in(sourceIds)}`)}
    SELECT c.id, sum(round(q.idf * (p.tf * ${k1}::float8 + p.tf)
      / (p.tf + ${k1}::float8 * (1 - ${b}::float8 + ${b}::float8 * p.len / q.avgdl)) * ${2 ** 30}::float8)
      / ${2 ** 30}::float8)::float8 AS score
    FROM weighted q
    JOIN chunk_terms p ON p.term = q.term AND p.source_id IN ${sql.in(sourceIds)}
    JOIN chunks c ON c.id = p.chunk_id
    JOIN documents d ON d.id = c.document_id AND d.active_version = c.version AND d.status = 'ready'
    GROUP BY c.id, c.no
    ORDER BY score DESC, c.no
    LIMIT ${limit}`.pipe(
    Effect.map((rows) => rows.map((row) => ({ chunkId: row.id, score: row.score }))),
    Effect.orDie
  )

/** The most segments any term in search has, over all its size classes (compaction leaves at most two). */
export const mostSegmentsPerTerm = (sql: SqlClient.SqlClient): Effect.Effect<number> =>
  Effect.map(
    sql<{ most: number }>`
      SELECT coalesce(max(n), 0)::int AS most FROM (
        SELECT count(*) AS n FROM lexical_segments JOIN lexical_terms USING (source_id, term) GROUP BY source_id, term
      ) s`.pipe(Effect.orDie),
    (rows) => rows[0]!.most
  )
