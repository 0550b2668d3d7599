import { Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { searchable } from "./Searchable.ts"

/** Chunks per statement when postings are written or counted: each statement stays short on the embedded engine. */
const postingsBatch = 25

/** Term rows per statement when document frequencies are written. */
const termsPerStatement = 1000

/**
 * The rarest terms' postings, up to this many, seed the floor that prunes the others; a query with at most ten times
 * as many postings in all is simply read whole (pruning would not pay there).
 */
const defaultSeedPostings = 2000

/**
 * At most this many terms are looked up by chunk, one statement step each (each step repeats the bounds of the
 * terms after it): a long query's other terms are read whole instead, so the statement stays small.
 */
const maxLookedUp = 16

/** What looking up one posting by chunk costs, in postings read in order. */
const probeCost = 4

/** Scores are counted in whole units of 2^-30 (see `contribution`). */
const unit = 2 ** 30

export interface Bm25Parameters {
  readonly k1: number
  readonly b: number
}

export interface LexicalHit {
  readonly chunkId: string
  readonly score: number
}

export interface ScanOptions {
  /** Score every posting of every query term: the reference the pruned top k equals. */
  readonly exhaustive?: boolean
  /** The rarest terms' postings that seed the floor; ten times as many in all are read whole. */
  readonly seedPostings?: number
  /** Prune also where it would not pay (tests: the pruned path on small corpora). */
  readonly always?: boolean
}

export interface LexicalScan {
  readonly hits: ReadonlyArray<LexicalHit>
  /** Postings read: scanned by term, and looked up by chunk. */
  readonly postingsRead: number
  /** Postings of the query's terms in the searched sources: what exhaustive scoring reads. */
  readonly postingsTotal: number
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
  /** `search`, saying how many postings it read against how many exhaustive scoring reads. */
  readonly scan: (
    query: string,
    sourceIds: ReadonlyArray<string>,
    limit: number,
    parameters: Bm25Parameters,
    options?: ScanOptions
  ) => Effect.Effect<LexicalScan>
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
        const frequencies = new Map<string, { df: number; maxTf: number; minLen: number }>()
        let sourceId: string | undefined
        for (const [from, to] of yield* ordinalRanges(documentId, null)) {
          const rows = yield* sql<{ source_id: string; term: string; df: number; max_tf: number; min_len: number }>`
            SELECT c.source_id, t.term, count(*)::int AS df, max(t.tf)::int AS max_tf, min(t.len)::int AS min_len
            FROM chunks c
            JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
            JOIN chunk_terms t ON t.chunk_id = c.id
            WHERE c.document_id = ${documentId} AND c.ordinal >= ${from} AND c.ordinal < ${to}
            GROUP BY c.source_id, t.term`
          for (const row of rows) {
            sourceId = row.source_id
            const seen = frequencies.get(row.term)
            frequencies.set(row.term, {
              df: (seen?.df ?? 0) + row.df,
              maxTf: Math.max(seen?.maxTf ?? 0, row.max_tf),
              minLen: Math.min(seen?.minLen ?? row.min_len, row.min_len)
            })
          }
        }
        const terms = [...frequencies.keys()].sort()
        for (let i = 0; sourceId !== undefined && i < terms.length; i += termsPerStatement) {
          const slice = terms.slice(i, i + termsPerStatement)
          const counts = slice.map((term) => frequencies.get(term)!)
          // The score bounds only widen, also when chunks leave: a bound left wider than needed is still a bound.
          yield* sql`
            INSERT INTO lexical_terms (source_id, term, df, max_tf, min_len)
            SELECT ${sourceId}, u.term, ${sign} * u.df, u.max_tf, u.min_len
            FROM unnest(
              ${slice}::text[], ${counts.map((c) => c.df)}::int[], ${counts.map((c) => c.maxTf)}::int[],
              ${counts.map((c) => c.minLen)}::int[]
            ) AS u (term, df, max_tf, min_len)
            ON CONFLICT (source_id, term) DO UPDATE SET
              df = lexical_terms.df + EXCLUDED.df,
              max_tf = greatest(lexical_terms.max_tf, EXCLUDED.max_tf),
              min_len = least(lexical_terms.min_len, EXCLUDED.min_len)`
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

      /** BM25's parameters and the searched sources' average chunk length, for one query. */
      interface Scoring extends Bm25Parameters {
        readonly avgdl: number
        /** Count the postings looked up (a measurement: `scan` reports them, `search` needs no count). */
        readonly counted: boolean
      }

      /** One query term: its IDF over the searched sources, its postings there, and the most it adds to a score. */
      interface Weighted {
        readonly term: string
        readonly idf: number
        readonly df: number
        /** The most the term adds to any chunk's score (from its largest frequency and shortest chunk). */
        readonly bound: number
        readonly maxTf: number
      }

      /**
       * BM25's term weight of one posting `p`, over the query terms `q` (term, idf), in whole units of 2^-30: sums
       * of such weights are exact in any order, so a chunk's score does not depend on which postings were scanned
       * and which looked up, and equal scores tie exactly (then the chunk id decides).
       */
      const contribution = ({ k1, b, avgdl }: Scoring) =>
        sql`round(q.idf * (p.tf * ${k1}::float8 + p.tf)
          / (p.tf + ${k1}::float8 * (1 - ${b}::float8 + ${b}::float8 * p.len / ${avgdl}::float8))
          * ${unit}::float8) / ${unit}::float8`

      /**
       * The most a term of this `idf` adds to a chunk of length `len` when its frequency is at most `maxTf` (the
       * weight grows with the frequency and shrinks with the length), rounded up to a whole unit and one more: never
       * below `contribution` of such a posting.
       */
      const weightBound = (
        { k1, b }: Bm25Parameters,
        avgdl: Statement.Fragment,
        idf: Statement.Fragment,
        maxTf: Statement.Fragment,
        len: Statement.Fragment
      ) =>
        sql`((ceil(${idf} * (${maxTf} * ${k1}::float8 + ${maxTf})
          / (${maxTf} + ${k1}::float8 * (1 - ${b}::float8 + ${b}::float8 * ${len} / ${avgdl}))
          * ${unit}::float8) + 1) / ${unit}::float8)`

      /** The query's terms found in the sources, with IDF, postings and bound there, largest bound first. */
      const queryTerms = (query: string, sourceIds: ReadonlyArray<string>, parameters: Bm25Parameters) =>
        sql<Weighted & { readonly avgdl: number }>`
          WITH terms AS (
            SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', ${query}))
          ),
          stats AS (
            SELECT coalesce(sum(chunk_count), 0)::float8 AS n, coalesce(sum(total_length), 0)::float8 AS total
            FROM lexical_stats WHERE source_id IN ${sql.in(sourceIds)}
          ),
          weighted AS (
            SELECT t.term, ln(1 + (stats.n - sum(l.df) + 0.5) / (sum(l.df) + 0.5))::float8 AS idf,
              sum(l.df)::float8 AS df, max(l.max_tf)::float8 AS max_tf, min(l.min_len)::float8 AS min_len,
              greatest(stats.total / greatest(stats.n, 1), 1)::float8 AS avgdl
            FROM terms t
            JOIN lexical_terms l ON l.term = t.term AND l.source_id IN ${sql.in(sourceIds)}
            CROSS JOIN stats
            GROUP BY t.term, stats.n, stats.total
            HAVING sum(l.df) > 0
          )
          SELECT term, idf, df, avgdl, max_tf AS "maxTf",
            ${weightBound(parameters, sql`avgdl`, sql`idf`, sql`max_tf`, sql`min_len`)}::float8 AS bound
          FROM weighted
          ORDER BY bound DESC, term`.pipe(Effect.orDie)

      /** The postings of the `terms` in the sources, each weighted: `p` with `weight`, per chunk `p.chunk_id`. */
      const postingsOf = (terms: ReadonlyArray<Weighted>, sourceIds: ReadonlyArray<string>) =>
        sql`unnest(${terms.map((w) => w.term)}::text[], ${terms.map((w) => w.idf)}::float8[]) AS q (term, idf)
          JOIN chunk_terms p ON p.term = q.term AND p.source_id IN ${sql.in(sourceIds)}`

      /**
       * The most the `terms` can add to a chunk of length `<alias>.len`: per chunk, tighter than their bounds over
       * every chunk.
       */
      const boundFor = (terms: ReadonlyArray<Weighted>, scoring: Scoring, alias: string) =>
        terms.map((w) =>
          weightBound(
            scoring,
            sql`${scoring.avgdl}::float8`,
            sql`${w.idf}::float8`,
            sql`${w.maxTf}::float8`,
            sql`${sql(alias)}.len`
          )
        ).reduce((sum, term) => sql`${sum} + ${term}`, sql`0::float8`)

      interface Completed {
        readonly id: string
        readonly score: number
        /** Postings looked up by chunk (0 unless counted). */
        readonly lookups: number
        /** Search can return it (ready document, active version). */
        readonly visible: boolean
      }

      /**
       * The best `fetch` of the chunks `x` (id, partial score, length), their scores completed with the `looked`
       * terms, best first.
       * MaxScore's lookups: the terms in turn, largest bound first, each joined only to the chunks that can still
       * reach `atLeast` with what the remaining terms could add (by index probes per chunk, or by reading the
       * term's postings where the planner finds that cheaper for many chunks).
       */
      const completed = (
        x: Statement.Fragment,
        sourceIds: ReadonlyArray<string>,
        looked: ReadonlyArray<Weighted>,
        atLeast: number,
        scoring: Scoring,
        fetch: number
      ) => {
        // Every step but the last is materialized once, whether or not its rows are counted, so counting does not
        // change the plan.
        const step = (i: number) => i < looked.length ? sql`${sql(`s${i}`)} AS MATERIALIZED` : sql`${sql(`s${i}`)} AS`
        const steps = [sql`${step(0)} (
          SELECT x.id, x.partial, x.len FROM ${x} x
          WHERE x.partial + ${boundFor(looked, scoring, "x")} >= ${atLeast}::float8)`]
        for (const [i, term] of looked.entries()) {
          steps.push(sql`${step(i + 1)} (
            SELECT * FROM (
              SELECT x.id, x.partial + coalesce(${contribution(scoring)}, 0) AS partial, x.len
              FROM ${sql(`s${i}`)} x CROSS JOIN (SELECT ${term.idf}::float8 AS idf) q
              LEFT JOIN chunk_terms p ON p.chunk_id = x.id AND p.term = ${term.term}
                AND p.source_id IN ${sql.in(sourceIds)}
            ) y
            WHERE y.partial + ${boundFor(looked.slice(i + 1), scoring, "y")} >= ${atLeast}::float8)`)
        }
        const lookups = scoring.counted
          ? looked.map((_, i) => sql`(SELECT count(*) FROM ${sql(`s${i}`)})`)
            .reduce((sum, count) => sql`${sum} + ${count}`, sql`0`)
          : sql`0`
        // Whether search can return the chunk (ready document, active version) is read for the best `fetch` alone.
        return sql`WITH ${sql.csv(steps)}
          SELECT x.id, x.partial::float8 AS score, (${lookups})::int AS lookups, d.id IS NOT NULL AS visible
          FROM (SELECT * FROM ${sql(`s${looked.length}`)} ORDER BY partial DESC, id LIMIT ${fetch}) x
          JOIN chunks c ON c.id = x.id
          LEFT JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
          ORDER BY score DESC, x.id`
      }

      /**
       * The best `limit` visible chunks among those holding one of `scanned` (every posting read, summed), each
       * score completed by lookups of the `looked` terms for the chunks whose partial score could still reach
       * `atLeast`. Postings of chunks search cannot return are dropped afterwards, so the scan over-fetches and
       * widens until `limit` visible chunks are found or the candidates run out.
       */
      const scoreTop = Effect.fnUntraced(function*(
        scanned: ReadonlyArray<Weighted>,
        looked: ReadonlyArray<Weighted>,
        atLeast: number,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        scoring: Scoring
      ) {
        const candidates = sql`(
          SELECT p.chunk_id AS id, sum(${contribution(scoring)})::float8 AS partial, max(p.len) AS len
          FROM ${postingsOf(scanned, sourceIds)}
          GROUP BY p.chunk_id)`
        let fetch = Math.max(limit * 2, 100)
        for (;;) {
          const scored = yield* sql<Completed>`${completed(candidates, sourceIds, looked, atLeast, scoring, fetch)}`
            .pipe(Effect.orDie)
          const hits = scored.filter((row) => row.visible)
          if (hits.length >= limit || scored.length < fetch) {
            return { hits: hits.slice(0, limit), lookups: scored[0]?.lookups ?? 0 }
          }
          fetch *= 4
        }
      })

      /**
       * A floor under the k-th best score: the chunks with the best partial scores over `seed`, scored exactly
       * (the other terms looked up); the k-th best of the visible ones, or 0 when fewer than k are.
       */
      const floorOf = Effect.fnUntraced(function*(
        seed: ReadonlyArray<Weighted>,
        others: ReadonlyArray<Weighted>,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        scoring: Scoring
      ) {
        const fetch = Math.max(limit * 2, 100)
        const best = yield* sql<{ id: string; partial: number; len: number }>`
          SELECT p.chunk_id AS id, sum(${contribution(scoring)})::float8 AS partial, max(p.len) AS len
          FROM ${postingsOf(seed, sourceIds)}
          GROUP BY p.chunk_id
          ORDER BY partial DESC, p.chunk_id
          LIMIT ${fetch}`.pipe(Effect.orDie)
        // Partial scores are lower bounds too: a chunk that cannot reach the k-th best of them is not looked up. With
        // too many other terms to look up, the partial scores alone give the floor (lower, still safe).
        const atLeast = best.length < limit ? 0 : best[limit - 1]!.partial
        const looked = others.length <= maxLookedUp ? others : []
        const chunks = sql`(SELECT * FROM unnest(${best.map((row) => row.id)}::text[],
          ${best.map((row) => row.partial)}::float8[], ${best.map((row) => row.len)}::int[]) AS x (id, partial, len))`
        const scored = yield* sql<Completed>`${completed(chunks, sourceIds, looked, atLeast, scoring, fetch)}`.pipe(
          Effect.orDie
        )
        const scores = scored.filter((row) => row.visible).map((row) => row.score)
        const floor = scores.length < limit ? 0 : scores[limit - 1]!
        return { floor, lookups: scored[0]?.lookups ?? 0 }
      })

      const rank = Effect.fnUntraced(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        parameters: Bm25Parameters,
        { always = false, exhaustive = false, seedPostings = defaultSeedPostings }: ScanOptions,
        counted: boolean
      ) {
        if (sourceIds.length === 0 || limit <= 0) return { hits: [], postingsRead: 0, postingsTotal: 0 }
        const weighted = yield* queryTerms(query, sourceIds, parameters)
        if (weighted.length === 0) return { hits: [], postingsRead: 0, postingsTotal: 0 }
        const postingsTotal = weighted.reduce((sum, term) => sum + term.df, 0)
        const toHits = (rows: ReadonlyArray<{ id: string; score: number }>) =>
          rows.map((row) => ({ chunkId: row.id, score: row.score }))
        const scoring = { ...parameters, avgdl: weighted[0]!.avgdl, counted }
        // Up to ten times the seed's postings in all, they are simply all read: pruning would not pay. So are
        // queries whose rarest term alone has more postings than the seed may read: no cheap floor.
        const rarest = Math.min(...weighted.map((term) => term.df))
        const wouldNotPay = postingsTotal <= seedPostings * 10 || rarest > seedPostings
        if (exhaustive || weighted.length === 1 || (wouldNotPay && !always)) {
          const { hits } = yield* scoreTop(weighted, [], 0, sourceIds, limit, scoring)
          return { hits: toHits(hits), postingsRead: postingsTotal, postingsTotal }
        }
        // MaxScore: first a floor under the k-th best score, from the chunks of the rarest terms (their postings are
        // few), each scored exactly; then the terms whose bounds together stay below that floor cannot lift a chunk
        // that has none of the other terms into the top k, so only the other terms' postings are read, and the
        // skipped terms are looked up for the chunks that could still make it.
        let seedCount = 1
        let seedRead = weighted[0]!.df
        while (seedCount < weighted.length && seedRead + weighted[seedCount]!.df <= seedPostings) {
          seedRead += weighted[seedCount]!.df
          seedCount++
        }
        const seed = yield* floorOf(weighted.slice(0, seedCount), weighted.slice(seedCount), sourceIds, limit, scoring)
        const { floor } = seed
        // weighted is by bound, largest first: skip the longest tail (up to maxLookedUp terms) whose bounds sum
        // below the floor.
        let skipped = weighted.length
        let skippedBound = 0
        while (
          skipped > 1 && weighted.length - skipped < maxLookedUp &&
          skippedBound + weighted[skipped - 1]!.bound < floor
        ) {
          skippedBound += weighted[skipped - 1]!.bound
          skipped--
        }
        const scanned = weighted.slice(0, skipped)
        const looked = weighted.slice(skipped)
        // Each chunk of the scanned terms' postings may need each skipped term looked up: when that could cost more
        // than reading the skipped terms' postings (a probe costs several reads), everything is read instead.
        const scannedPostings = scanned.reduce((sum, term) => sum + term.df, 0)
        const lookedPostings = postingsTotal - scannedPostings
        if (scannedPostings * looked.length * probeCost > lookedPostings && !always) {
          const { hits } = yield* scoreTop(weighted, [], floor, sourceIds, limit, scoring)
          return { hits: toHits(hits), postingsRead: seedRead + seed.lookups + postingsTotal, postingsTotal }
        }
        const final = yield* scoreTop(scanned, looked, floor, sourceIds, limit, scoring)
        const postingsRead = seedRead + seed.lookups + scannedPostings + final.lookups
        return { hits: toHits(final.hits), postingsRead, postingsTotal }
      })

      const scan = Effect.fn("LexicalIndex.scan")(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        parameters: Bm25Parameters,
        options: ScanOptions = {}
      ) {
        return yield* rank(query, sourceIds, limit, parameters, options, true)
      })

      const search = Effect.fn("LexicalIndex.search")(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        parameters: Bm25Parameters
      ) {
        return (yield* rank(query, sourceIds, limit, parameters, {}, false)).hits
      })

      return LexicalIndex.of({ count, measure, search, scan })
    })
  )
}
