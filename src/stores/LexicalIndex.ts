import { Context, Effect, Layer, Semaphore } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { EngramConfig } from "../config.ts"
import {
  forEachPosting,
  pack,
  packedAggregate,
  type Posting,
  postingsBound,
  type Scores,
  scorePostings,
  type TermWeights,
  weightSlots
} from "./packedPostings.ts"
import { searchable, type SearchableChunk, searchableChunkColumns } from "./Searchable.ts"
import { SegmentCache } from "./segmentCache.ts"
import { ownedAmong } from "./SourceAccess.ts"

/** Chunks per statement when postings are written or counted: each statement stays short on the embedded engine. */
const postingsBatch = 25

/** Term rows per statement when document frequencies are written. */
const termsPerStatement = 1000

/** A term's segments of one size class are merged into one when there are this many (see `merge`). */
const mergeFanIn = 8

/**
 * Postings one merge statement takes out at most (a term's full class with more is merged alone): the merge holds
 * them in the service's memory, and a document can fill the classes of a thousand terms at once.
 */
const postingsPerMerge = 262_144

/**
 * Postings one compaction transaction rewrites at most (a term with more is compacted alone): on the embedded
 * database nothing else is answered while it runs.
 */
const postingsPerCompaction = 16_384

/** Segments one planning step of compaction looks at, at most (the statement reads their terms' other ones too). */
const segmentsPerPlan = 4096

/** Scores are counted in whole units of 2^-30 (see `weightUnits`). */
const unit = 2 ** 30

export interface Bm25Parameters {
  readonly k1: number
  readonly b: number
}

export interface LexicalHit {
  readonly chunkId: string
  readonly score: number
  /** The chunk as search returns it, when asked for (`withChunks`). */
  readonly chunk?: SearchableChunk
}

/** What the searchable check found for a chunk number: its chunk id (and chunk, when asked), or null: not searchable. */
type Checked = { readonly id: string; readonly chunk?: SearchableChunk } | null

/** `Math.round` with halves to the even neighbour, as PostgreSQL rounds a float8. */
const roundHalfEven = (x: number) => {
  const r = Math.round(x)
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r
}

/**
 * BM25's weight of a term of this `idf` in a chunk of length `len` where it occurs `tf` times, in whole units of
 * 2^-30: sums of such weights are exact in any order, and equal scores tie exactly (then the chunk number decides).
 * The expression is the SQL reference's (`scripts/lib/bm25Reference.ts`) operation for operation.
 */
export const weightUnits = (
  { k1, b }: Bm25Parameters,
  avgdl: number,
  idf: number,
  tf: number,
  len: number
) => roundHalfEven(idf * (tf * k1 + tf) / (tf + k1 * (1 - b + b * len / avgdl)) * unit)

/** A query term found in the sources: its IDF there, the sources' average chunk length, its postings. */
interface QueryTerm {
  readonly term: string
  readonly idf: number
  readonly avgdl: number
  readonly postings: number
}

/**
 * MaxScore only for searches of at most this many results: deeper, the k-th score is lower, more chunks could reach
 * it, and looking their weights up cost more than reading the common terms (docs/decisions.md).
 */
const maxScoreDepth = 20

/** More than any weight of a term of this `idf`, in units: BM25's weight grows towards idf·(k1 + 1) with tf. */
const boundUnits = ({ k1 }: Bm25Parameters, idf: number) => Math.ceil(idf * (k1 + 1) * unit) + 1

/**
 * The chunks one query scored: their numbers, and their scores in units — `units[i]` of `nos[i]`, or, `byNumber`,
 * `units[nos[i]]` (an accumulator's own scores, read where they are).
 */
interface Scored {
  readonly nos: Int32Array
  readonly units: Float64Array
  readonly byNumber: boolean
}

/** The score of a scored chunk, by its index. */
const unitsAt = ({ byNumber, nos, units }: Scored, i: number) => units[byNumber ? nos[i]! : i]!

/** A segment as the search's first statement names it: its postings, or null where they come through the cache. */
interface SegmentRow {
  readonly id: string
  readonly term: string
  readonly packed: Uint8Array | null
}

/** Weight tables an accumulator keeps for the next query; a query of more common terms makes the others anew. */
const pooledTables = 32
const noTable = new Float64Array(0)

/**
 * Scores by chunk number, for one query at a time (reused by the next: clearing is by stamp, not by filling), and
 * the query's terms' weight tables.
 */
export class Accumulator implements Scores {
  units = new Float64Array(1024)
  stamps = new Int32Array(1024)
  stamp = 0
  /** The numbers scored by this query, in the order first scored: `seen[0 .. seenLength)`. */
  seen = new Int32Array(1024)
  seenLength = 0
  /** Weight tables, one per term of the query, reused by the next (`weightsOf`). */
  private readonly tables: Array<Float64Array> = []
  private tablesUsed = 0

  start() {
    if (this.stamp === 2 ** 31 - 1) {
      this.stamps.fill(0)
      this.stamp = 0
    }
    this.stamp++
    this.seenLength = 0
    this.tablesUsed = 0
  }

  /**
   * A term's `weightUnits`, each weight of a term frequency and chunk length in the table (nearly every posting)
   * computed once per query for a term of `tabledPostings` or more: the division costs more than the lookup, and
   * filling the table more than it saves on fewer.
   */
  weightsOf(parameters: Bm25Parameters, { avgdl, idf, postings }: QueryTerm, tabledPostings: number): TermWeights {
    const weigh = (tf: number, len: number) => weightUnits(parameters, avgdl, idf, tf, len)
    if (postings < tabledPostings) return { table: noTable, weigh }
    if (this.tablesUsed === this.tables.length && this.tables.length < pooledTables) {
      this.tables.push(new Float64Array(weightSlots))
    }
    const table = this.tablesUsed < this.tables.length ? this.tables[this.tablesUsed++]! : new Float64Array(weightSlots)
    return { table: table.fill(Number.NaN), weigh }
  }

  /** Adds the weights of a packed segment's postings; returns how many it held. */
  addSegment(packed: Uint8Array, weights: TermWeights): number {
    const bound = postingsBound(packed)
    if (this.seenLength + bound > this.seen.length) {
      const seen = new Int32Array(Math.max(this.seenLength + bound, this.seen.length * 2))
      seen.set(this.seen.subarray(0, this.seenLength))
      this.seen = seen
    }
    return scorePostings(packed, weights, this)
  }

  /**
   * The scores so far, read in place: valid until more are added or the next query starts. (Copies of them were a
   * megabyte a search at 100,000 chunks, and such buffers are what sets off V8's full collections on this path.)
   */
  scored(): Scored {
    return { nos: this.seen.subarray(0, this.seenLength), units: this.units, byNumber: true }
  }

  grow(size: number) {
    const capacity = Math.max(size, this.units.length * 2)
    const units = new Float64Array(capacity)
    units.set(this.units)
    const stamps = new Int32Array(capacity)
    stamps.set(this.stamps)
    this.units = units
    this.stamps = stamps
  }
}

/** Postings scored, at least, between two yields to the other fibers (about a millisecond of work). */
const postingsPerYield = 32_768

/**
 * The indexes of the best `n` scored chunks, best first: the higher score, then the lower chunk number (a heap with
 * the worst of those kept at its root).
 */
const best = (scored: Scored, n: number): Array<number> => {
  const { nos } = scored
  const above = (i: number, j: number) => {
    const a = unitsAt(scored, i)
    const b = unitsAt(scored, j)
    return a > b || (a === b && nos[i]! < nos[j]!)
  }
  const heap: Array<number> = []
  const swap = (i: number, j: number) => {
    const t = heap[i]!
    heap[i] = heap[j]!
    heap[j] = t
  }
  for (let candidate = 0; candidate < nos.length && n > 0; candidate++) {
    if (heap.length < n) {
      heap.push(candidate)
      for (let i = heap.length - 1; i > 0 && above(heap[(i - 1) >> 1]!, heap[i]!); i = (i - 1) >> 1) {
        swap(i, (i - 1) >> 1)
      }
    } else if (above(candidate, heap[0]!)) {
      heap[0] = candidate
      for (let i = 0;;) {
        let worst = i
        const left = 2 * i + 1
        if (left < heap.length && above(heap[worst]!, heap[left]!)) worst = left
        if (left + 1 < heap.length && above(heap[worst]!, heap[left + 1]!)) worst = left + 1
        if (worst === i) break
        swap(i, worst)
        i = worst
      }
    }
  }
  return heap.sort((i, j) => above(i, j) ? -1 : 1)
}

/** Full classes in groups of at most `postingsPerMerge` postings (a class with more is a group alone), in order. */
export const mergeGroups = <A extends { readonly postings: number }>(
  full: ReadonlyArray<A>,
  limit: number = postingsPerMerge
): Array<Array<A>> => {
  const groups: Array<Array<A>> = []
  let group: Array<A> = []
  let postings = 0
  for (const row of full) {
    if (group.length > 0 && postings + row.postings > limit) {
      groups.push(group)
      group = []
      postings = 0
    }
    group.push(row)
    postings += row.postings
  }
  if (group.length > 0) groups.push(group)
  return groups
}

/** Sources to search: their ids, or ids with the user they must belong to (see `searchMeasured`). */
export type SearchedSources = ReadonlyArray<string> | { readonly ids: ReadonlyArray<string>; readonly owner: string }

/** A term of a source that has more than one segment, as compaction plans it. */
interface CompactedTerm {
  readonly term: string
  readonly segments: number
  readonly postings: number
  readonly largest: number
  /** bigint ids read as text */
  readonly largest_id: string
}

/** Whether compaction leaves the term's largest segment as it is: it outweighs the rest `mergeFanIn` times. */
const keepsLargest = (term: CompactedTerm) => term.largest > mergeFanIn * (term.postings - term.largest)

/** The postings compaction rewrites for the term. */
const rewritten = (term: CompactedTerm) => keepsLargest(term) ? term.postings - term.largest : term.postings

/**
 * SQL common table expressions ending in `weighted (term, df, idf, avgdl)`: the query's terms found in the sources,
 * each with the number of chunks holding it and BM25's IDF over the sources, and the sources' average chunk length in
 * lexemes. `sources` follows `source_id IN`: `sql.in(ids)` made a fragment, or a subquery.
 */
export const weightedTerms = (sql: SqlClient.SqlClient, query: string, sources: Statement.Fragment) =>
  sql`terms AS (
      SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', ${query}))
    ),
    stats AS (
      SELECT coalesce(sum(chunk_count), 0)::float8 AS n, coalesce(sum(total_length), 0)::float8 AS total
      FROM lexical_stats WHERE source_id IN ${sources}
    ),
    weighted AS (
      SELECT t.term, sum(l.df) AS df, ln(1 + (stats.n - sum(l.df) + 0.5) / (sum(l.df) + 0.5))::float8 AS idf,
        greatest(stats.total / greatest(stats.n, 1), 1)::float8 AS avgdl
      FROM terms t
      JOIN lexical_terms l ON l.term = t.term AND l.source_id IN ${sources}
      CROSS JOIN stats
      GROUP BY t.term, stats.n, stats.total
      HAVING sum(l.df) > 0
    )`

const isOwned = (sources: SearchedSources): sources is Exclude<SearchedSources, ReadonlyArray<string>> =>
  !Array.isArray(sources)

/**
 * BM25 over Postgres full-text lexemes (English stemming and stop words). Each chunk's lexemes are written with the
 * chunk (chunk_terms: term → chunk, its source, term frequency, chunk length). When a document enters search, its
 * chunks get new numbers and their postings are appended, packed, to per (source, term) segments
 * (lexical_segments), and document frequencies and lengths are added per source (lexical_terms / lexical_stats);
 * when it leaves, the statistics are taken back in the same transaction, so scores are exact BM25 over what search
 * can return, on either engine. Search reads a term's segments (a few rows) and scores them in the service; a
 * posting of a chunk no longer searchable is skipped when the best chunks are checked, and dropped when its term's
 * segments are next merged.
 */
export class LexicalIndex extends Context.Service<LexicalIndex, {
  /**
   * Adds (+1) or removes (-1) the document's current-version chunks from the statistics and, when it adds them, from
   * the packed postings. Call it inside the transaction that makes the document ready (+1) or takes it out of
   * search (-1).
   */
  readonly count: (documentId: string, sign: 1 | -1) => Effect.Effect<void>
  /** Records each chunk's postings and length in lexemes (BM25's document length) for a freshly written version. */
  readonly measure: (documentId: string, version: number) => Effect.Effect<void>
  /**
   * The best `limit` searchable chunks of the sources for the query, best first (ties: the older chunk number);
   * `withChunks`: each with its chunk, read by the statement that checks it is searchable.
   */
  readonly search: (
    query: string,
    sourceIds: ReadonlyArray<string>,
    limit: number,
    parameters: Bm25Parameters,
    withChunks?: boolean
  ) => Effect.Effect<ReadonlyArray<LexicalHit>>
  /**
   * One step of compaction, for when there is no other work: planning (the terms of up to `segmentsPerPlan` segments
   * written since the last look, every segment the first time) or compacting one planned group of terms in a
   * transaction of its own. A term's segments become one, or two when its largest holds more than `mergeFanIn` times
   * the rest (the rest merged, the largest left as it is): search reads at most two rows per term, and a compaction
   * rewrites at most `mergeFanIn` + 1 times the term's postings outside its largest segment. Whether it did anything.
   */
  readonly compactStep: Effect.Effect<boolean>
  /**
   * `search`, and how many postings it read of the query's terms' postings in the sources. The sources may be given
   * with the user they must belong to: its first statement then reads only those of them that are the owner's and
   * counts them (`owned`); when that is fewer than the distinct ids, nothing more is read and there are no hits.
   */
  readonly searchMeasured: (
    query: string,
    sources: SearchedSources,
    limit: number,
    parameters: Bm25Parameters,
    withChunks?: boolean
  ) => Effect.Effect<{
    readonly hits: ReadonlyArray<LexicalHit>
    readonly postings: { readonly read: number; readonly total: number }
    /** How many of the distinct source ids were searched: all, or the owner's. */
    readonly owned: number
  }>
}>()("engram/LexicalIndex") {
  /**
   * `inlinePostings`: a term with at most this many postings is read at once, however common (deferring it could
   * not save much). `lookupCost`: looking up a deferred term's weight in one chunk is counted as reading this many
   * postings (scattered index pages against a sequential read; docs/decisions.md has the comparison that chose
   * 256). `tabledPostings`: a term with at least this many postings has its weights looked up in a table
   * (`Accumulator.weightsOf`). `cachedPostings`: a segment of at least this many postings is kept in the service's
   * memory once read (`SegmentCache`, `cacheBytes` in all). Tests set them low to prune, use the tables and the cache
   * on small corpora.
   */
  static readonly layerWith = (
    { cacheBytes, cachedPostings, inlinePostings, lookupCost, tabledPostings }: {
      readonly inlinePostings: number
      readonly lookupCost: number
      readonly tabledPostings: number
      readonly cachedPostings: number
      readonly cacheBytes: number
    }
  ) => Layer.effect(
    LexicalIndex,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      /** Accumulators not in use: one per search running at once, so a search can let other work in between. */
      const idle: Array<Accumulator> = []
      const cache = new SegmentCache(cacheBytes)

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

      /**
       * The first `limit` chunks, in the order of `numbers`, that search can return (number, chunk id; with
       * `withChunks` the whole searchable chunk): the numbers before the last one answered that are not answered
       * are of no searchable chunk, those after it were not looked at. Joined from the numbers, not filtered by
       * `= ANY(...)`: the planner compared each chunk of every ready document with the whole list.
       */
      const searchableOf = (numbers: ReadonlyArray<number>, limit: number, withChunks: boolean) =>
        sql<{ no: number; id: string } & Partial<SearchableChunk>>`
          SELECT c.no, ${withChunks ? searchableChunkColumns(sql) : sql`c.id`}
          FROM unnest(${numbers}::int[]) WITH ORDINALITY AS n (no, rank)
          JOIN chunks c ON c.no = n.no
          JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
          ORDER BY n.rank LIMIT ${limit}`

      /** A segment's size class: segments of one class are merged together, so each posting is rewritten rarely. */
      const sizeClass = sql`floor(ln(postings) / ln(${mergeFanIn}))::int`

      /**
       * The source's segments of the `terms` merged where a size class has `mergeFanIn` of them: per term, the full
       * classes' postings but those of numbers that left search, by chunk number, in one segment; all terms at once
       * (a document fills classes of many terms). Run after the terms' rows in lexical_terms were written in this
       * transaction: their locks keep two documents from merging one term at once.
       */
      const merge = Effect.fnUntraced(function*(sourceId: string, terms: ReadonlyArray<string>) {
        // A merged segment can fill the next size class in turn: its term is looked at again.
        for (let pending = terms; pending.length > 0;) {
          const full = yield* sql<{ term: string; size: number; postings: number }>`
            SELECT s.term, ${sizeClass} AS size, sum(s.postings)::int AS postings
            FROM unnest(${pending}::text[]) AS q (term)
            JOIN lexical_segments s ON s.source_id = ${sourceId} AND s.term = q.term
            GROUP BY s.term, size HAVING count(*) >= ${mergeFanIn}`
          for (const group of mergeGroups(full)) yield* mergeClasses(sourceId, group)
          pending = full.map((row) => row.term)
        }
      })

      /** The full classes merged: each one's segments replaced by one, without the postings of numbers that left search. */
      const mergeClasses = (sourceId: string, full: ReadonlyArray<{ readonly term: string; readonly size: number }>) =>
        rewrite(
          sourceId,
          sql<{ term: string; packed: Uint8Array }>`
            DELETE FROM lexical_segments s
            USING unnest(${full.map((row) => row.term)}::text[], ${full.map((row) => row.size)}::int[]) AS f (term, size)
            WHERE s.source_id = ${sourceId} AND s.term = f.term AND ${sizeClass} = f.size
            RETURNING s.term, s.packed`
        )

      /** What `removed` takes out written back as one segment per term, less postings of numbers that left search. */
      const rewrite = Effect.fnUntraced(function*(
        sourceId: string,
        removed: Effect.Effect<ReadonlyArray<{ readonly term: string; readonly packed: Uint8Array }>, SqlError.SqlError>
      ) {
        const byTerm = new Map<string, Array<Posting>>()
        let low = Number.MAX_SAFE_INTEGER
        let high = 0
        for (const segment of yield* removed) {
          const postings = byTerm.get(segment.term) ?? []
          byTerm.set(segment.term, postings)
          forEachPosting(segment.packed, (no, tf, len) => {
            postings.push({ no, tf, len })
            low = Math.min(low, no)
            high = Math.max(high, no)
          })
        }
        if (byTerm.size === 0) return
        const dead = new Set((yield* sql<{ no: number }>`
          SELECT no FROM lexical_dead WHERE source_id = ${sourceId} AND no BETWEEN ${low} AND ${high}`)
          .map((row) => row.no))
        const merged = [...byTerm].map(([term, postings]) => ({
          term,
          kept: postings.filter((posting) => !dead.has(posting.no)).sort((x, y) => x.no - y.no)
        })).filter(({ kept }) => kept.length > 0)
        yield* sql`
          INSERT INTO lexical_segments (source_id, term, postings, packed)
          SELECT ${sourceId}, u.term, u.postings, decode(u.packed, 'base64')
          FROM unnest(${merged.map((m) => m.term)}::text[], ${merged.map((m) => m.kept.length)}::int[],
            ${merged.map((m) => pack(m.kept).toString("base64"))}::text[]) AS u (term, postings, packed)`
      })

      /** Segment ids up to this one were planned for; the groups planned and not yet compacted. */
      let plannedUpTo = 0
      const planned: Array<{ readonly sourceId: string; readonly terms: ReadonlyArray<CompactedTerm> }> = []
      const compacting = yield* Semaphore.make(1)

      const planCompaction = Effect.fnUntraced(function*() {
        const [row] = yield* sql<{ last: string | null }>`
          SELECT coalesce(
            (SELECT id FROM lexical_segments WHERE id > ${plannedUpTo} ORDER BY id OFFSET ${segmentsPerPlan - 1} LIMIT 1),
            (SELECT max(id) FROM lexical_segments WHERE id > ${plannedUpTo})
          )::text AS last`
        if (row?.last == null) return false
        const last = Number(row.last)
        const terms = yield* sql<CompactedTerm & { readonly source_id: string }>`
          SELECT s.source_id, s.term, count(*)::int AS segments, sum(s.postings)::int AS postings,
            max(s.postings) AS largest, (array_agg(s.id ORDER BY s.postings DESC, s.id))[1]::text AS largest_id
          FROM lexical_segments s
          JOIN (
            SELECT DISTINCT source_id, term FROM lexical_segments WHERE id > ${plannedUpTo} AND id <= ${last}
          ) touched ON touched.source_id = s.source_id AND touched.term = s.term
          GROUP BY s.source_id, s.term HAVING count(*) > 1
          ORDER BY s.source_id, s.term`
        plannedUpTo = last
        const bySource = new Map<string, Array<CompactedTerm>>()
        for (const { source_id, ...term } of terms) {
          // A large segment beside a little rest stays; merging the rest is enough (and two segments are left).
          if (keepsLargest(term) && term.segments === 2) continue
          const ofSource = bySource.get(source_id)
          if (ofSource === undefined) bySource.set(source_id, [term])
          else ofSource.push(term)
        }
        for (const [sourceId, ofSource] of bySource) {
          const costed = ofSource.map((term) => ({ ...term, postings: rewritten(term) }))
          for (const group of mergeGroups(costed, postingsPerCompaction)) planned.push({ sourceId, terms: group })
        }
        return true
      })

      /** The terms' segments compacted; terms still in search are locked first (in term order, as `count` does). */
      const compactGroup = (sourceId: string, terms: ReadonlyArray<CompactedTerm>) =>
        sql.withTransaction(Effect.gen(function*() {
          const locked = new Set((yield* sql<{ term: string }>`
            SELECT t.term FROM unnest(${terms.map((t) => t.term)}::text[]) AS q (term)
            JOIN lexical_terms t ON t.source_id = ${sourceId} AND t.term = q.term
            ORDER BY t.term FOR UPDATE OF t`).map((row) => row.term))
          const chosen = terms.filter((term) => locked.has(term.term))
          if (chosen.length === 0) return
          // The segment each term keeps as it is; 0, which no segment has, where all are merged.
          const kept = chosen.map((term) => keepsLargest(term) ? term.largest_id : "0")
          yield* rewrite(
            sourceId,
            sql<{ term: string; packed: Uint8Array }>`
              DELETE FROM lexical_segments s
              USING unnest(${chosen.map((term) => term.term)}::text[], ${kept}::bigint[]) AS f (term, kept)
              WHERE s.source_id = ${sourceId} AND s.term = f.term AND s.id <> f.kept
              RETURNING s.term, s.packed`
          )
        }))

      const compactStep = compacting.withPermitsIfAvailable(1)(Effect.gen(function*() {
        const next = planned.shift()
        if (next === undefined) return yield* planCompaction()
        yield* compactGroup(next.sourceId, next.terms)
        return true
      })).pipe(
        Effect.map((done) => done._tag === "Some" && done.value),
        Effect.orDie,
        Effect.withSpan("LexicalIndex.compactStep")
      )

      const count = Effect.fn("LexicalIndex.count")(function*(documentId: string, sign: 1 | -1) {
        // Entering search, the chunks get numbers never used before: postings packed under an earlier number (this
        // chunk before it left search) stay behind as postings of no searchable chunk. Leaving, the numbers are
        // recorded as such, for merges to drop their postings.
        if (sign === -1) {
          yield* sql`
            INSERT INTO lexical_dead (source_id, no)
            SELECT c.source_id, c.no FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
            WHERE c.document_id = ${documentId} AND c.no IS NOT NULL
            ON CONFLICT DO NOTHING`
        }
        if (sign === 1) {
          yield* sql`
            UPDATE chunks c SET no = nextval('chunk_numbers')
            FROM documents d WHERE d.id = c.document_id AND c.version = d.active_version AND c.document_id = ${documentId}`
        }
        // Document frequencies are summed here over bounded batches of chunks (entering, with each batch's postings
        // packed per term), then each term row is written once, in term order (so concurrent documents of a source
        // take the rows in the same order and cannot deadlock), with the document's segment of the term.
        const frequencies = new Map<string, number>()
        const packed = new Map<string, Array<string>>()
        let sourceId: string | undefined
        for (const [from, to] of yield* ordinalRanges(documentId, null)) {
          const rows = yield* sql<{ source_id: string; term: string; df: number; packed: string | null }>`
            SELECT source_id, term, count(*)::int AS df,
              ${sign === 1 ? sql`encode(${packedAggregate(sql)}, 'base64')` : sql`NULL`} AS packed
            FROM (
              SELECT c.source_id, t.term, c.no, t.tf, t.len,
                c.no - lag(c.no, 1, 0) OVER (PARTITION BY c.source_id, t.term ORDER BY c.no) AS gap
              FROM chunks c
              JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
              JOIN chunk_terms t ON t.chunk_id = c.id
              WHERE c.document_id = ${documentId} AND c.ordinal >= ${from} AND c.ordinal < ${to}
            ) p
            GROUP BY source_id, term`
          for (const row of rows) {
            sourceId = row.source_id
            frequencies.set(row.term, (frequencies.get(row.term) ?? 0) + row.df)
            if (row.packed !== null) packed.set(row.term, [...(packed.get(row.term) ?? []), row.packed])
          }
        }
        /** The document's postings of the term in one segment (its batches' segments joined in chunk-number order). */
        const segmentOf = (term: string) => {
          const parts = packed.get(term)!
          if (parts.length === 1) return parts[0]!
          const postings: Array<Posting> = []
          for (const part of parts) {
            forEachPosting(Buffer.from(part, "base64"), (no, tf, len) => postings.push({ no, tf, len }))
          }
          return pack(postings.sort((x, y) => x.no - y.no)).toString("base64")
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
            // A term no searchable chunk holds any more goes, with its segments: they hold only postings of
            // chunks out of search, and a deleted document's words are not kept until the next merge.
            yield* sql`
              WITH gone AS (
                DELETE FROM lexical_terms t USING unnest(${slice}::text[]) AS q (term)
                WHERE t.source_id = ${sourceId} AND t.term = q.term AND t.df <= 0
                RETURNING t.term
              )
              DELETE FROM lexical_segments s USING gone WHERE s.source_id = ${sourceId} AND s.term = gone.term`
          } else {
            yield* sql`
              INSERT INTO lexical_segments (source_id, term, postings, packed)
              SELECT ${sourceId}, u.term, u.postings, decode(u.packed, 'base64')
              FROM unnest(${slice}::text[], ${slice.map((term) => frequencies.get(term)!)}::int[],
                ${slice.map(segmentOf)}::text[]) AS u (term, postings, packed)`
            yield* merge(sourceId, slice)
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
        // source and length.
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

      /** Scores segments into the accumulator; other requests get the thread between segments, every `postingsPerYield`. */
      const scoreSegments = Effect.fnUntraced(function*(
        accumulator: Accumulator,
        segments: ReadonlyArray<{ readonly term: string; readonly packed: Uint8Array }>,
        weightsOf: (term: string) => TermWeights
      ) {
        let postings = 0
        let yieldAt = postingsPerYield
        for (const segment of segments) {
          postings += accumulator.addSegment(segment.packed, weightsOf(segment.term))
          if (postings >= yieldAt) {
            yieldAt = postings + postingsPerYield
            yield* Effect.yieldNow
          }
        }
        return postings
      })

      /**
       * The best `limit` searchable chunks among the scored ones, best first: the best are checked for being
       * searchable, more of them while too few of those checked are (`known` remembers what was checked).
       */
      const visibleBest = Effect.fnUntraced(function*(
        scored: Scored,
        limit: number,
        known: Map<number, Checked>,
        withChunks: boolean
      ) {
        /** Checks the numbers not known yet, in this order, until `missing` searchable chunks are found among them. */
        const check = Effect.fnUntraced(function*(numbers: ReadonlyArray<number>, missing: number) {
          const unchecked = numbers.filter((no) => !known.has(no))
          const rows = yield* searchableOf(unchecked, missing, withChunks)
          for (const { no, ...row } of rows) {
            known.set(no, withChunks ? { id: row.id, chunk: row as SearchableChunk } : { id: row.id })
          }
          // Up to the last number answered, the others are of no searchable chunk; after it, not looked at.
          const last = rows.length < missing ? unchecked.length - 1 : unchecked.indexOf(rows[rows.length - 1]!.no)
          for (const no of unchecked.slice(0, last + 1)) if (!known.has(no)) known.set(no, null)
        })
        for (let fetch = limit * 2;; fetch *= 4) {
          const ranked = best(scored, fetch).map((i) => ({ no: scored.nos[i]!, units: unitsAt(scored, i) }))
          const hits: Array<NonNullable<Checked> & { readonly units: number }> = []
          for (let at = 0; at < ranked.length && hits.length < limit; at++) {
            const { no, units } = ranked[at]!
            if (!known.has(no)) yield* check(ranked.slice(at).map((item) => item.no), limit - hits.length)
            const found = known.get(no)
            if (found) hits.push({ ...found, units })
          }
          if (hits.length >= limit || ranked.length < fetch) return hits
        }
      })

      /** The segments' postings: given, or kept in the cache; undefined if the cache lacks one of them. */
      const postingsOf = (
        rows: ReadonlyArray<SegmentRow>
      ): ReadonlyArray<{ readonly term: string; readonly packed: Uint8Array }> | undefined => {
        const segments: Array<{ readonly term: string; readonly packed: Uint8Array }> = []
        for (const { id, packed, term } of rows) {
          const found = packed ?? cache.get(id)
          if (found === undefined) return undefined
          segments.push({ term, packed: found })
        }
        return segments
      }

      /** Keeps the segments of at least `cachedPostings` postings. */
      const keep = (rows: ReadonlyArray<SegmentRow & { readonly postings: number }>) => {
        for (const { id, packed, postings } of rows) {
          if (packed !== null && postings >= cachedPostings) cache.set(id, packed)
        }
      }

      /**
       * The search. `throughCache`: the first statement leaves out the postings of segments of `cachedPostings` or
       * more, and the search gives up (undefined) if the cache lacks one of those it reads; asked again without,
       * it reads them all in its first statement and keeps the large ones. (A segment is never read by its id
       * in a later statement: a merge may have replaced it in between.)
       */
      const searchWith = Effect.fnUntraced(function*(
        query: string,
        sources: SearchedSources,
        limit: number,
        parameters: Bm25Parameters,
        withChunks: boolean,
        throughCache: boolean
      ) {
        const sourceIds = [...new Set(isOwned(sources) ? sources.ids : sources)]
        if (sourceIds.length === 0 || limit <= 0) return { hits: [], postings: { read: 0, total: 0 }, owned: 0 }
        // The sources read: the ids, or those of them that are the owner's (found once, and counted).
        const owner = isOwned(sources) ? sources.owner : undefined
        const searched = owner === undefined ? sql`${sql.in(sourceIds)}` : sql`(SELECT id FROM searched)`
        // The query's terms found in the sources, each with its IDF there and the sources' average chunk length, and
        // their segments: how many postings each holds and the postings themselves, but for the most common terms
        // (from the lowest IDF up, while their IDFs add up to less than a quarter of the highest) found in more than
        // `inlinePostings` chunks: those are deferred (MaxScore, below), when at most `maxScoreDepth` are asked. The
        // IDFs are added up only for such a term (CASE reads its branches in order), not by a window over every term.
        // Through the cache, segments of `cachedPostings` or more that it can hold come without their postings
        // (`octet_length` reads a stored value's size without reading the value). Always one row at least, for the
        // count of the sources searched.
        const rows = yield* sql<{
          readonly owned: number
          readonly term: string | null
          readonly idf: number
          readonly avgdl: number
          readonly id: string
          readonly postings: number
          readonly deferred: boolean
          readonly packed: Uint8Array | null
        }>`
          WITH ${owner === undefined ? sql`` : sql`searched AS MATERIALIZED (${ownedAmong(sql, owner, sourceIds)}),`}
          ${weightedTerms(sql, query, searched)},
          found AS (
            SELECT r.term, r.idf, r.avgdl, s.id::text AS id, s.postings, s.packed,
              CASE
                WHEN r.df <= ${inlinePostings} OR NOT ${limit <= maxScoreDepth} THEN false
                ELSE (SELECT sum(w.idf) FROM weighted w WHERE (w.idf, w.term) <= (r.idf, r.term))
                  < (SELECT max(idf) FROM weighted) / 4
              END AS deferred
            FROM weighted r JOIN lexical_segments s ON s.term = r.term AND s.source_id IN ${searched}
          )
          SELECT ${owner === undefined ? sourceIds.length : sql`(SELECT count(*) FROM searched)`}::int AS owned,
            found.term, found.idf, found.avgdl, found.id, found.postings, found.deferred,
            CASE
              WHEN found.deferred OR (${throughCache} AND found.postings >= ${cachedPostings}
                AND octet_length(found.packed) <= ${cacheBytes}) THEN NULL
              ELSE found.packed
            END AS packed
          FROM (SELECT 1) AS one LEFT JOIN found ON true`
        const owned = rows[0]?.owned ?? 0
        if (owned < sourceIds.length) return { hits: [], postings: { read: 0, total: 0 }, owned }
        const byTerm = new Map<string, QueryTerm & { readonly deferred: boolean }>()
        const segmentRows: Array<SegmentRow & { readonly postings: number; readonly deferred: boolean }> = []
        for (const { avgdl, deferred, id, idf, packed, postings, term } of rows) {
          if (term === null) continue
          const seen = byTerm.get(term)?.postings ?? 0
          byTerm.set(term, { term, idf, avgdl, postings: seen + postings, deferred })
          segmentRows.push({ id, term, packed, postings, deferred })
        }
        const terms = [...byTerm.values()]
        const total = terms.reduce((sum, term) => sum + term.postings, 0)
        if (terms.length === 0) return { hits: [], postings: { read: 0, total }, owned }
        const deferred = terms.filter((term) => term.deferred)
        const read = postingsOf(segmentRows.filter((row) => !row.deferred))
        if (read === undefined) return undefined
        keep(segmentRows)
        // The deferred terms' segments, as they are when read (by term: kept ones may have been merged since).
        const deferredSegments = Effect.gen(function*() {
          const kept = postingsOf(segmentRows.filter((row) => row.deferred))
          if (kept !== undefined) return kept
          const segments = yield* sql<SegmentRow & { readonly postings: number; readonly packed: Uint8Array }>`
            SELECT id::text AS id, term, postings, packed FROM lexical_segments
            WHERE term = ANY(${deferred.map((term) => term.term)}::text[]) AND source_id IN ${sql.in(sourceIds)}`
          keep(segments)
          return segments
        })
        const accumulator = idle.pop() ?? new Accumulator()
        accumulator.start()
        const weights = new Map<string, TermWeights>()
        const weightsOf = (term: string) => {
          let found = weights.get(term)
          if (found === undefined) {
            weights.set(term, found = accumulator.weightsOf(parameters, byTerm.get(term)!, tabledPostings))
          }
          return found
        }
        let postingsRead = yield* scoreSegments(accumulator, read, weightsOf)
        const known = new Map<number, Checked>()
        const finish = (scored: Scored) =>
          Effect.map(visibleBest(scored, limit, known, withChunks), (hits) => ({
            hits: hits.map(({ chunk, id, units }): LexicalHit =>
              chunk === undefined ? { chunkId: id, score: units / unit } : { chunkId: id, score: units / unit, chunk }
            ),
            postings: { read: postingsRead, total },
            owned
          }))
        // The accumulator's scores are read in place: it is reused once the search is done with them.
        const finishWithAll = Effect.suspend(() => finish(accumulator.scored())).pipe(
          Effect.tap(() => Effect.sync(() => idle.push(accumulator)))
        )
        if (deferred.length === 0) return yield* finishWithAll
        // MaxScore: the deferred terms (common ones, of low weight) together add at most `bound` to a chunk. A chunk
        // they alone would bring cannot reach the k-th best searchable chunk of the terms read (its score only
        // grows); a chunk already scored needs their weights only if it could reach it with them, looked up per
        // chunk. Otherwise (too few chunks, the bound too high, more lookups than reading the deferred postings is
        // worth, or a term of negative weight, which statistics out of step could give) their segments are read.
        const bound = deferred.reduce((sum, term) => sum + boundUnits(parameters, term.idf), 0)
        const affordable = deferred.reduce((sum, term) => sum + term.postings, 0) / lookupCost / deferred.length
        const partial = accumulator.scored()
        const within = (threshold: number) => {
          const chosen: Array<number> = []
          for (let i = 0; i < partial.nos.length && chosen.length <= affordable; i++) {
            if (unitsAt(partial, i) + bound >= threshold) chosen.push(i)
          }
          return chosen
        }
        // The k-th best of all chunks scored is at least the k-th best searchable one: if even that leaves too
        // many chunks to look up, their visibility need not be checked first.
        const anyKth = best(partial, limit)[limit - 1]
        const hopeful = anyKth !== undefined && deferred.every((term) => term.idf >= 0) &&
          bound < unitsAt(partial, anyKth) && within(unitsAt(partial, anyKth)).length <= affordable
        const floor = hopeful ? yield* visibleBest(partial, limit, known, withChunks) : []
        const threshold = floor[limit - 1]?.units ?? Infinity
        const candidates = floor.length === limit && bound < threshold ? within(threshold) : []
        if (candidates.length === 0 || candidates.length > affordable) {
          postingsRead += yield* scoreSegments(accumulator, yield* deferredSegments, weightsOf)
          return yield* finishWithAll
        }
        const nos = Int32Array.from(candidates, (i) => partial.nos[i]!)
        const units = Float64Array.from(candidates, (i) => unitsAt(partial, i))
        idle.push(accumulator)
        const at = new Map(Array.from(nos, (no, i) => [no, i]))
        const looked = yield* sql<{ no: number; term: string; tf: number; len: number }>`
          SELECT n.no, t.term, t.tf, t.len FROM unnest(${Array.from(nos)}::int[]) AS n (no)
          JOIN chunks c ON c.no = n.no
          JOIN chunk_terms t ON t.chunk_id = c.id AND t.term = ANY(${deferred.map((term) => term.term)}::text[])`
        // The accumulator, and its weight tables, went back to the pool: these few weights are computed directly.
        for (const row of looked) {
          const { avgdl, idf } = byTerm.get(row.term)!
          units[at.get(row.no)!]! += weightUnits(parameters, avgdl, idf, row.tf, row.len)
        }
        postingsRead += looked.length
        return yield* finish({ nos, units, byNumber: false })
      })

      const searchMeasured = Effect.fn("LexicalIndex.search")(function*(
        query: string,
        sources: SearchedSources,
        limit: number,
        parameters: Bm25Parameters,
        withChunks = false
      ) {
        const search = (throughCache: boolean) =>
          searchWith(query, sources, limit, parameters, withChunks, throughCache)
        return (cacheBytes > 0 ? yield* search(true) : undefined) ?? (yield* search(false))!
      }, Effect.orDie)

      const search = (
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number,
        parameters: Bm25Parameters,
        withChunks = false
      ) => Effect.map(searchMeasured(query, sourceIds, limit, parameters, withChunks), ({ hits }) => hits)

      return LexicalIndex.of({ count, measure, search, searchMeasured, compactStep })
    })
  )

  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* EngramConfig
    return LexicalIndex.layerWith({
      inlinePostings: 16_384,
      lookupCost: 256,
      tabledPostings: 1024,
      cachedPostings: 1024,
      cacheBytes: config.bm25CacheMb * 1024 * 1024
    })
  }))
}
