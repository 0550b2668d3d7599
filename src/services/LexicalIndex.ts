import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export interface Bm25Parameters {
  readonly k1: number
  readonly b: number
}

export interface LexicalHit {
  readonly chunkId: string
  readonly score: number
}

/**
 * BM25 over Postgres full-text lexemes (English stemming and stop words). Document frequencies and lengths are
 * kept per source in lexical_terms / lexical_stats and changed in the same transaction as a document enters
 * or leaves the searchable set, so scores are exact BM25 over what search can return, on either engine.
 */
export class LexicalIndex extends Context.Service<LexicalIndex, {
  /**
   * Adds (+1) or removes (-1) the document's current-version chunks from the statistics. Call it inside the
   * transaction that makes the document ready (+1) or takes it out of search (-1).
   */
  readonly count: (documentId: string, sign: 1 | -1) => Effect.Effect<void>
  /** Records each chunk's length in lexemes (BM25's document length) for a freshly written version. */
  readonly measure: (documentId: string, version: number) => Effect.Effect<void>
  readonly search: (
    query: string,
    sourceIds: ReadonlyArray<string>,
    limit: number,
    parameters: Bm25Parameters
  ) => Effect.Effect<ReadonlyArray<LexicalHit>>
}>()("engram/LexicalIndex") {
  static readonly layer = Layer.effect(
    LexicalIndex,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const count = Effect.fn("LexicalIndex.count")(function*(documentId: string, sign: 1 | -1) {
        yield* sql`
          INSERT INTO lexical_terms (source_id, term, df)
          SELECT c.source_id, u.lexeme, ${sign} * count(*)
          FROM chunks c
          JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
          CROSS JOIN LATERAL unnest(c.lexemes) AS u
          WHERE c.document_id = ${documentId}
          GROUP BY c.source_id, u.lexeme
          ORDER BY u.lexeme
          ON CONFLICT (source_id, term) DO UPDATE SET df = lexical_terms.df + EXCLUDED.df`
        yield* sql`
          INSERT INTO lexical_stats (source_id, chunk_count, total_length)
          SELECT c.source_id, ${sign} * count(*), ${sign} * coalesce(sum(c.lexeme_count), 0)
          FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
          WHERE c.document_id = ${documentId}
          GROUP BY c.source_id
          ON CONFLICT (source_id) DO UPDATE SET
            chunk_count = lexical_stats.chunk_count + EXCLUDED.chunk_count,
            total_length = lexical_stats.total_length + EXCLUDED.total_length`
        if (sign === -1) {
          yield* sql`
            DELETE FROM lexical_terms t USING documents d
            WHERE d.id = ${documentId} AND t.source_id = d.source_id AND t.df <= 0`
        }
      }, Effect.orDie)

      const measure = Effect.fn("LexicalIndex.measure")(function*(documentId: string, version: number) {
        yield* sql`
          UPDATE chunks SET lexeme_count = coalesce(
            (SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM unnest(chunks.lexemes) AS u), 0)
          WHERE document_id = ${documentId} AND version = ${version}`
      }, Effect.orDie)

      const search = Effect.fn("LexicalIndex.search")(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        { k1, b }: Bm25Parameters
      ) {
        if (sourceIds.length === 0) return []
        const rows = yield* sql<{ id: string; score: number }>`
          WITH terms AS (
            SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', ${query}))
          ),
          stats AS (
            SELECT coalesce(sum(chunk_count), 0)::float8 AS n, coalesce(sum(total_length), 0)::float8 AS total
            FROM lexical_stats WHERE source_id IN ${sql.in(sourceIds)}
          ),
          idf AS (
            SELECT t.term, ln(1 + (stats.n - sum(l.df) + 0.5) / (sum(l.df) + 0.5)) AS idf
            FROM terms t
            JOIN lexical_terms l ON l.term = t.term AND l.source_id IN ${sql.in(sourceIds)}
            CROSS JOIN stats
            GROUP BY t.term, stats.n
            HAVING sum(l.df) > 0
          ),
          matcher AS (
            SELECT to_tsquery('simple', string_agg(quote_literal(term), ' | ')) AS q FROM idf
          ),
          candidates AS (
            SELECT c.id, c.lexemes, c.lexeme_count
            FROM chunks c
            JOIN documents d ON d.id = c.document_id AND c.version = d.active_version AND d.status = 'ready'
            CROSS JOIN matcher
            WHERE c.source_id IN ${sql.in(sourceIds)} AND c.lexemes @@ matcher.q
          )
          SELECT c.id,
            sum(idf.idf * (tf.n * (${k1} + 1)) /
              (tf.n + ${k1} * (1 - ${b} + ${b} * c.lexeme_count / greatest(stats.total / greatest(stats.n, 1), 1)))
            )::float8 AS score
          FROM candidates c
          CROSS JOIN stats
          CROSS JOIN LATERAL unnest(c.lexemes) AS u
          JOIN idf ON idf.term = u.lexeme
          CROSS JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS n) AS tf
          GROUP BY c.id
          ORDER BY score DESC, c.id
          LIMIT ${limit}`.pipe(Effect.orDie)
        return rows.map((row) => ({ chunkId: row.id, score: row.score }))
      })

      return LexicalIndex.of({ count, measure, search })
    })
  )
}
