import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { searchable } from "./Searchable.ts"

/** Chunks per statement when postings are written or counted: each statement stays short on the embedded engine. */
const postingsBatch = 25

/** Term rows per statement when document frequencies are written. */
const termsPerStatement = 1000

export interface Bm25Parameters {
  readonly k1: number
  readonly b: number
}

export interface LexicalHit {
  readonly chunkId: string
  readonly score: number
}

/**
 * BM25 over Postgres full-text lexemes (English stemming and stop words). Each chunk's lexemes are an inverted
 * index (chunk_terms: term → chunk, its source, term frequency, chunk length), written with the chunk. Document frequencies and lengths
 * are kept per source in lexical_terms / lexical_stats and changed in the same transaction as a document enters
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

      /** The version's chunk ordinals in ranges of `postingsBatch` chunks, so no statement handles a whole document. */
      const ordinalRanges = Effect.fnUntraced(function*(documentId: string, version: number | null) {
        const [row] = yield* sql<{ last: number | null }>`
          SELECT max(c.ordinal) AS last FROM chunks c
          ${version === null
            ? sql`JOIN documents d ON d.id = c.document_id AND c.version = d.active_version`
            : sql``}
          WHERE c.document_id = ${documentId} ${version === null ? sql`` : sql`AND c.version = ${version}`}`
        const last = row?.last ?? -1
        const ranges: Array<readonly [number, number]> = []
        for (let from = 0; from <= last; from += postingsBatch) ranges.push([from, from + postingsBatch])
        return ranges
      })

      const count = Effect.fn("LexicalIndex.count")(function*(documentId: string, sign: 1 | -1) {
        // Document frequencies are summed here over bounded batches of chunks, then each term row is written once,
        // in term order (so concurrent documents of a source take the rows in the same order and cannot deadlock).
        const frequencies = new Map<string, number>()
        let sourceId: string | undefined
        for (const [from, to] of yield* ordinalRanges(documentId, null)) {
          const rows = yield* sql<{ source_id: string; term: string; df: number }>`
            SELECT c.source_id, t.term, count(*)::int AS df
            FROM chunks c
            JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
            JOIN chunk_terms t ON t.chunk_id = c.id
            WHERE c.document_id = ${documentId} AND c.ordinal >= ${from} AND c.ordinal < ${to}
            GROUP BY c.source_id, t.term`
          for (const row of rows) {
            sourceId = row.source_id
            frequencies.set(row.term, (frequencies.get(row.term) ?? 0) + row.df)
          }
        }
        const terms = [...frequencies.keys()].sort()
        for (let i = 0; sourceId !== undefined && i < terms.length; i += termsPerStatement) {
          const slice = terms.slice(i, i + termsPerStatement)
          yield* sql`
            INSERT INTO lexical_terms (source_id, term, df)
            SELECT ${sourceId}, u.term, ${sign} * u.df
            FROM unnest(${slice}::text[], ${slice.map((term) => frequencies.get(term)!)}::int[]) AS u (term, df)
            ON CONFLICT (source_id, term) DO UPDATE SET df = lexical_terms.df + EXCLUDED.df`
          if (sign === -1) {
            yield* sql`
              DELETE FROM lexical_terms WHERE source_id = ${sourceId} AND term = ANY(${slice}::text[]) AND df <= 0`
          }
        }
        yield* sql`
          INSERT INTO lexical_stats (source_id, chunk_count, total_length)
          SELECT c.source_id, ${sign} * count(*), ${sign} * coalesce(sum(c.lexeme_count), 0)
          FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
          WHERE c.document_id = ${documentId}
          GROUP BY c.source_id
          ON CONFLICT (source_id) DO UPDATE SET
            chunk_count = lexical_stats.chunk_count + EXCLUDED.chunk_count,
            total_length = lexical_stats.total_length + EXCLUDED.total_length`
      }, Effect.orDie)

      const measure = Effect.fn("LexicalIndex.measure")(function*(documentId: string, version: number) {
        // The version's chunks were just (re)written, so their postings are new rows; each carries its chunk's
        // source and length, which scoring reads from the postings alone.
        for (const [from, to] of yield* ordinalRanges(documentId, version)) {
          yield* sql`
            WITH postings AS (
              INSERT INTO chunk_terms (term, chunk_id, source_id, tf, len)
              SELECT u.term, c.id, c.source_id, u.tf, (sum(u.tf) OVER (PARTITION BY c.id))::int
              FROM chunks c CROSS JOIN LATERAL (
                SELECT lexeme AS term, coalesce(array_length(positions, 1), 1) AS tf
                FROM unnest(to_tsvector('english', c.text))
              ) u
              WHERE c.document_id = ${documentId} AND c.version = ${version}
                AND c.ordinal >= ${from} AND c.ordinal < ${to}
              RETURNING chunk_id, len
            )
            UPDATE chunks SET lexeme_count = lengths.len
            FROM (SELECT DISTINCT chunk_id, len FROM postings) lengths
            WHERE chunks.id = lengths.chunk_id`
        }
      }, Effect.orDie)

      const search = Effect.fn("LexicalIndex.search")(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        { k1, b }: Bm25Parameters
      ) {
        if (sourceIds.length === 0) return []
        // Step 1: the query's terms with their IDF over the searched sources (a handful of rows).
        const weighted = yield* sql<{ term: string; idf: number; n: number; avgdl: number }>`
          WITH terms AS (
            SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', ${query}))
          ),
          stats AS (
            SELECT coalesce(sum(chunk_count), 0)::float8 AS n, coalesce(sum(total_length), 0)::float8 AS total
            FROM lexical_stats WHERE source_id IN ${sql.in(sourceIds)}
          )
          SELECT t.term, ln(1 + (stats.n - sum(l.df) + 0.5) / (sum(l.df) + 0.5))::float8 AS idf, stats.n,
            greatest(stats.total / greatest(stats.n, 1), 1)::float8 AS avgdl
          FROM terms t
          JOIN lexical_terms l ON l.term = t.term AND l.source_id IN ${sql.in(sourceIds)}
          CROSS JOIN stats
          GROUP BY t.term, stats.n, stats.total
          HAVING sum(l.df) > 0`.pipe(Effect.orDie)
        if (weighted.length === 0) return []
        const terms = weighted.map((w) => w.term)
        const idfs = weighted.map((w) => w.idf)
        const avgdl = weighted[0]!.avgdl
        // Step 2: BM25 over the postings alone (one covering index scan per term), best first. Postings of chunks
        // search cannot return (an older version, a document not ready) are dropped afterwards, so the scan
        // over-fetches and widens until `limit` visible chunks are found or the postings run out.
        let fetch = Math.max(limit * 2, 100)
        for (;;) {
          const scored = yield* sql<{ id: string; score: number }>`
            SELECT p.chunk_id AS id,
              sum(q.idf * (p.tf * (${k1} + 1)) / (p.tf + ${k1} * (1 - ${b} + ${b} * p.len / ${avgdl}::float8)))::float8
                AS score
            FROM unnest(${terms}::text[], ${idfs}::float8[]) AS q (term, idf)
            JOIN chunk_terms p ON p.term = q.term AND p.source_id IN ${sql.in(sourceIds)}
            GROUP BY p.chunk_id
            ORDER BY score DESC, p.chunk_id
            LIMIT ${fetch}`.pipe(Effect.orDie)
          const visible = scored.length === 0 ? [] : yield* sql<{ id: string }>`
            SELECT c.id FROM chunks c
            JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
            WHERE c.id IN ${sql.in(scored.map((row) => row.id))}`.pipe(Effect.orDie)
          const visibleIds = new Set(visible.map((row) => row.id))
          const hits = scored.filter((row) => visibleIds.has(row.id))
          if (hits.length >= limit || scored.length < fetch) {
            return hits.slice(0, limit).map((row) => ({ chunkId: row.id, score: row.score }))
          }
          fetch *= 4
        }
      })

      return LexicalIndex.of({ count, measure, search })
    })
  )
}
