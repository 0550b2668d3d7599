import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  answersQuery,
  editDistance,
  fuzzLimit,
  inYear,
  queryCues,
  type QueryCues,
  yearNotice
} from "../retrieval/queryGraph.ts"
import { searchable } from "../stores/Searchable.ts"

export interface GraphHit {
  readonly chunkId: string
  readonly score: number
}

/**
 * The graph list of one query, and how much to trust it (0..1): the weight of the best entity the query names, so
 * a list built on a name most documents mention, or on an ordinary word, barely moves fusion.
 */
export interface GraphList {
  readonly hits: ReadonlyArray<GraphHit>
  readonly confidence: number
  /** How a month or day named without a year was read, when the sources' events moved it to another year. */
  readonly notice?: string
}

/** Score of an event per query entity it involves (direct), and per entity one hop away (multi-hop). */
const directWeight = 1
const hopWeight = 0.5
/** An event inside the query's time gets this added; one with a time outside it keeps this share of its score. */
const timeBoost = 1
const outsideTimeShare = 0.25
/** A chat chunk with a message sent inside the query's time scores this (an event inside it scores timeBoost). */
const spokenScore = 0.5
/** Confidence of a list built from the query's time alone (no entity named). */
const timeOnlyConfidence = 0.5
/** Nameness of an entity whose name has no searchable word (stop words only, like "US"). */
const unknownNameness = 0.5
/** Entities weighing less say too little about the query to follow (an ordinary word, a name most documents have). */
const minimumWeight = 0.5
/** Bounds on the work one query may do. */
const maxEntities = 20
/** Entities one hop away that are weighed: the ones sharing the most events with the query's. */
const maxNeighbours = 50
const maxEvents = 500
const fuzzyCandidates = 2000
/** Years before and after its own that a month or day named without a year ("in June") may move to. */
const yearsAround = 250

interface EventRow {
  readonly event_id: string
  readonly entity_id: string
  readonly chunk_id: string
  readonly time_start: Date | null
  readonly time_end: Date | null
}

/**
 * The graph list of multi search: entities named in the query (exactly, or within a small edit distance) →
 * the events they take part in → the chunks those events come from; entities sharing an event with them are
 * followed one hop further at a lower weight, so a question that needs two facts about one entity finds both.
 * A time expression in the query ("in 2019", "before March 2020", "last week", or relative to an event: "before
 * the merger") boosts events inside it and lowers those outside; a query with a time but no known entity lists the events of that time
 * and the chat chunks with a message sent in it.
 *
 * Each entity counts by its weight in (0, 1], the product of two corpus statistics:
 * - specificity, ln(1 + N/n) / ln(1 + N) for an entity that n of the N ready documents mention (1 for a name only
 *   one document has): the rarer the name, the more its events say about the query, like IDF in BM25;
 * - nameness, the share of the chunks containing the name's rarest word that mention the entity: near 1 for a real
 *   name ("ALDH1", "Acme"), near 0 for an ordinary word the extractor once took for a name ("Properties" at the
 *   start of a sentence), so such words in a query do not pull in unrelated events.
 */
export class GraphSearch extends Context.Service<GraphSearch, {
  /** What the graph reads from a query (its time now), before any source is looked at. */
  readonly cues: (query: string) => Effect.Effect<QueryCues>
  /** The list for a query's cues; empty, without a statement, unless `answersQuery(cues)`. */
  readonly search: (
    cues: QueryCues,
    sourceIds: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<GraphList>
}>()("engram/GraphSearch") {
  static readonly layer = Layer.effect(
    GraphSearch,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // chrono-node (about 3 MB of heap) is loaded by the first search, not held by an idle service.
      const chrono = yield* Effect.cached(Effect.promise(() => import("chrono-node")))

      /** Entity ids whose keys match the query's names, exactly or fuzzily. */
      const matchEntities = (names: ReadonlyArray<string>, sourceIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (names.length === 0) return []
          const exact = yield* sql<{ key: string; entity_id: string }>`
            SELECT key, entity_id FROM entity_keys
            WHERE source_id IN ${sql.in(sourceIds)} AND key = ANY(${names}::text[])
            ORDER BY key, entity_id`
          const found = new Set(exact.map((row) => row.key))
          const fuzzy = names.filter((name) => !found.has(name) && fuzzLimit(name) > 0)
          const ids = new Set(exact.map((row) => row.entity_id))
          if (fuzzy.length > 0) {
            const prefixes = [...new Set(fuzzy.map((name) => name.slice(0, 2)))]
            const candidates = yield* sql<{ key: string; entity_id: string }>`
              SELECT key, entity_id FROM entity_keys
              WHERE source_id IN ${sql.in(sourceIds)} AND left(key, 2) = ANY(${prefixes}::text[])
              ORDER BY key, entity_id
              LIMIT ${fuzzyCandidates}`
            for (const name of fuzzy) {
              const limit = fuzzLimit(name)
              for (const row of candidates) {
                if (fuzzLimit(row.key) > 0 && editDistance(name, row.key, limit) <= limit) ids.add(row.entity_id)
              }
            }
          }
          return [...ids]
        })

      /** The weight (0..1] of each entity among the searched sources' ready documents; unseen entities are left out. */
      const weigh = (entityIds: ReadonlyArray<string>, sourceIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (entityIds.length === 0) return new Map<string, number>()
          const rows = yield* sql<
            { id: string; documents: number; chunks: number; word_chunks: number | null; total: number }
          >`
            SELECT e.id, seen.documents, seen.chunks, (
                SELECT min(l.df) FROM unnest(to_tsvector('english', e.name)) u
                JOIN lexical_terms l ON l.source_id = e.source_id AND l.term = u.lexeme
              )::int AS word_chunks, (
                SELECT count(*) FROM documents WHERE source_id IN ${sql.in(sourceIds)} AND status = 'ready'
              )::int AS total
            FROM entities e
            CROSS JOIN LATERAL (
              SELECT count(DISTINCT m.document_id)::int AS documents, count(DISTINCT m.chunk_id)::int AS chunks
              FROM entity_mentions m
              JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
              WHERE m.entity_id = e.id
            ) seen
            WHERE e.id = ANY(${entityIds}::text[]) AND seen.documents > 0`
          return new Map(rows.map((row) => {
            const n = Math.max(row.total, 1)
            const specificity = Math.log(1 + n / row.documents) / Math.log(1 + n)
            const nameness = row.word_chunks === null || row.word_chunks === 0
              ? unknownNameness
              : Math.min(1, row.chunks / row.word_chunks)
            return [row.id, specificity * nameness]
          }))
        })

      /** The weightiest of the entities, at least minimumWeight, at most maxEntities of them. */
      const mostSpecific = (weights: ReadonlyMap<string, number>) =>
        [...weights.entries()]
          .filter(([, weight]) => weight >= minimumWeight)
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, maxEntities)
          .map(([id]) => id)

      /** Visible events (their document ready, this version) of the entities, with their chunks, the first entity's first. */
      const eventsOf = (entityIds: ReadonlyArray<string>) =>
        entityIds.length === 0 ? Effect.succeed([] as ReadonlyArray<EventRow>) : sql<EventRow>`
          SELECT e.id AS event_id, p.entity_id, c.chunk_id, e.time_start, e.time_end
          FROM unnest(${entityIds}::text[]) WITH ORDINALITY AS q (entity_id, position)
          JOIN event_participants p ON p.entity_id = q.entity_id
          JOIN events e ON e.id = p.event_id
          JOIN documents d ON d.id = e.document_id AND ${searchable(sql, "d", "e.version")}
          JOIN event_chunks c ON c.event_id = e.id
          ORDER BY q.position, e.id, c.chunk_id
          LIMIT ${maxEvents * 4}`

      /**
       * The time an event-relative phrase stands for: before the anchor event's start, or after its end. The anchor
       * is the dated visible event of those kinds, one involving an entity of the query first, then the most
       * confident, then the earliest. Null when there is no such event.
       */
      const anchoredTime = (
        anchor: NonNullable<QueryCues["anchor"]>,
        entityIds: ReadonlyArray<string>,
        sourceIds: ReadonlyArray<string>
      ) =>
        Effect.gen(function*() {
          const [event] = yield* sql<{ time_start: Date; time_end: Date | null }>`
            SELECT e.time_start, e.time_end
            FROM events e
            JOIN documents d ON d.id = e.document_id AND ${searchable(sql, "d", "e.version")}
            WHERE e.source_id IN ${sql.in(sourceIds)} AND e.kind = ANY(${anchor.kinds}::text[])
              AND e.time_start IS NOT NULL
            ORDER BY EXISTS (
                SELECT 1 FROM event_participants p WHERE p.event_id = e.id AND p.entity_id = ANY(${entityIds}::text[])
              ) DESC, e.confidence DESC, e.time_start, e.id
            LIMIT 1`
          if (event === undefined) return null
          return anchor.side === "before"
            ? { start: null, end: event.time_start.toISOString(), text: anchor.text }
            : { start: (event.time_end ?? event.time_start).toISOString(), end: null, text: anchor.text }
        })

      /**
       * A month or day named without a year ("in June", "on February 9") moved to the year in which a visible event of
       * the sources starts inside it: the latest up to the one the query gave it (the latest not after now), else the
       * earliest after it. In an archive of 2023 chats "in June" is June 2023. As given when no year has one.
       */
      const yearOfEvents = (time: NonNullable<QueryCues["time"]>, sourceIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const unmoved = { time, notice: undefined }
          const given = { start: time.start!, end: time.end! }
          const givenStart = new Date(given.start)
          // The years the sources' events span (the time index's ends, one probe per source), within yearsAround.
          const [span] = yield* sql<{ first: Date | null; last: Date | null }>`
            SELECT min(r.first) AS first, max(r.last) AS last
            FROM unnest(${sourceIds}::text[]) AS s (id)
            CROSS JOIN LATERAL (
              SELECT min(time_start) AS first, max(time_start) AS last FROM events WHERE source_id = s.id
            ) r`
          if (span === undefined || span.first === null || span.last === null) return unmoved
          const first = Math.max(span.first.getUTCFullYear(), givenStart.getUTCFullYear() - yearsAround)
          const last = Math.min(span.last.getUTCFullYear(), givenStart.getUTCFullYear() + yearsAround)
          const periods = Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => inYear(given, first + i))
            .filter((period) => period !== null)
          if (periods.length === 0) return unmoved
          const found = yield* sql<{ start: Date; finish: Date }>`
            SELECT p.start, p.finish
            FROM unnest(${periods.map((p) => p.start)}::timestamptz[], ${periods.map((p) => p.end)}::timestamptz[])
              AS p (start, finish)
            WHERE EXISTS (
              SELECT 1 FROM events e
              JOIN documents d ON d.id = e.document_id AND ${searchable(sql, "d", "e.version")}
              WHERE e.source_id IN ${sql.in(sourceIds)} AND e.time_start >= p.start AND e.time_start < p.finish
            )
            ORDER BY p.start`
          const chosen = found.filter((p) => p.start <= givenStart).at(-1) ?? found[0]
          if (chosen === undefined || chosen.start.getTime() === givenStart.getTime()) return unmoved
          return {
            time: { ...time, start: chosen.start.toISOString(), end: chosen.finish.toISOString() },
            notice: yearNotice(time.text, chosen, chosen.start > givenStart)
          }
        })

      const cues = Effect.fn("GraphSearch.cues")(function*(query: string) {
        return queryCues(query, new Date(yield* Clock.currentTimeMillis), (yield* chrono).parse)
      })

      const search = Effect.fn("GraphSearch.search")(function*(
        cues: QueryCues,
        sourceIds: ReadonlyArray<string>,
        limit: number
      ) {
        if (sourceIds.length === 0 || !answersQuery(cues)) return { hits: [], confidence: 0 }
        const matched = yield* matchEntities(cues.names, sourceIds)
        const directWeights = yield* weigh(matched, sourceIds)
        const direct = mostSpecific(directWeights)
        const scores = new Map<string, { score: number; start: Date | null; end: Date | null; chunks: Set<string> }>()
        const add = (rows: ReadonlyArray<EventRow>, weightOf: (entityId: string) => number, counted: Set<string>) => {
          for (const row of rows) {
            const key = `${row.event_id}`
            const entry = scores.get(key) ?? { score: 0, start: row.time_start, end: row.time_end, chunks: new Set() }
            entry.chunks.add(row.chunk_id)
            const pair = `${row.event_id}/${row.entity_id}`
            if (!counted.has(pair)) {
              counted.add(pair)
              entry.score += weightOf(row.entity_id)
            }
            scores.set(key, entry)
          }
        }
        const counted = new Set<string>()
        const directRows = yield* eventsOf(direct)
        add(directRows, (id) => directWeight * (directWeights.get(id) ?? 0), counted)
        if (direct.length > 0) {
          // One hop: the other participants of those events, and their own events.
          const neighbours = yield* sql<{ entity_id: string }>`
            SELECT p.entity_id FROM event_participants p
            WHERE p.event_id = ANY(${[...new Set(directRows.map((row) => row.event_id))]}::text[])
              AND NOT p.entity_id = ANY(${direct}::text[])
            GROUP BY p.entity_id
            ORDER BY count(*) DESC, p.entity_id
            LIMIT ${maxNeighbours}`
          const hopWeights = yield* weigh(neighbours.map((row) => row.entity_id), sourceIds)
          add(yield* eventsOf(mostSpecific(hopWeights)), (id) => hopWeight * (hopWeights.get(id) ?? 0), counted)
        }
        const anchored = cues.time === null && cues.anchor !== null
          ? yield* anchoredTime(cues.anchor, direct, sourceIds)
          : null
        const { time, notice } = cues.time?.yearless === true
          ? yield* yearOfEvents(cues.time, sourceIds)
          : { time: cues.time ?? anchored, notice: undefined }
        if (time !== null) {
          const from = time.start === null ? null : new Date(time.start)
          const to = time.end === null ? null : new Date(time.end)
          const inside = (start: Date | null, end: Date | null) =>
            start !== null && (to === null || start < to) && (from === null || (end ?? start) > from)
          if (direct.length === 0) {
            const timed = yield* sql<EventRow>`
              SELECT e.id AS event_id, '' AS entity_id, c.chunk_id, e.time_start, e.time_end
              FROM events e
              JOIN documents d ON d.id = e.document_id AND ${searchable(sql, "d", "e.version")}
              JOIN event_chunks c ON c.event_id = e.id
              WHERE e.source_id IN ${sql.in(sourceIds)} AND e.time_start IS NOT NULL
                ${to === null ? sql`` : sql`AND e.time_start < ${to}`}
                ${from === null ? sql`` : sql`AND coalesce(e.time_end, e.time_start) > ${from}`}
              ORDER BY e.time_start, e.id
              LIMIT ${maxEvents}`
            add(timed, () => 0, counted)
          }
          let within = 0
          if (direct.length === 0) {
            // Chat messages sent in that time, whether or not the extractor found an event in them.
            const spoken = yield* sql<{ id: string }>`
              SELECT c.id FROM chunks c
              JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
              WHERE c.source_id IN ${sql.in(sourceIds)} AND c.spoken_at IS NOT NULL
                ${to === null ? sql`` : sql`AND c.spoken_at < ${to}`}
                ${from === null ? sql`` : sql`AND coalesce(c.spoken_until, c.spoken_at) >= ${from}`}
                AND EXISTS (
                  SELECT 1 FROM jsonb_array_elements(c.messages) m
                  WHERE m->>'spoken_at' IS NOT NULL
                    ${to === null ? sql`` : sql`AND (m->>'spoken_at')::timestamptz < ${to}`}
                    ${from === null ? sql`` : sql`AND (m->>'spoken_at')::timestamptz >= ${from}`}
                )
              ORDER BY c.spoken_at, c.id
              LIMIT ${maxEvents}`
            for (const row of spoken) {
              scores.set(`spoken:${row.id}`, { score: spokenScore, start: null, end: null, chunks: new Set([row.id]) })
              within++
            }
          }
          for (const entry of scores.values()) {
            if (inside(entry.start, entry.end)) {
              entry.score += timeBoost
              within++
            } else if (entry.start !== null) entry.score *= outsideTimeShare
          }
          // A time that none of the candidate events falls in says nothing the graph can use.
          if (!cues.asks && within === 0) return { hits: [], confidence: 0 }
        } else if (!cues.asks) {
          return { hits: [], confidence: 0 }
        }
        const chunkScores = new Map<string, number>()
        for (const entry of scores.values()) {
          if (entry.score <= 0) continue
          for (const chunk of entry.chunks) {
            // A chunk scores by its best event, with a little for every further event it holds.
            const previous = chunkScores.get(chunk)
            chunkScores.set(chunk, previous === undefined ? entry.score : Math.max(previous, entry.score) + 0.01)
          }
        }
        const hits = [...chunkScores.entries()]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, limit)
          .map(([chunkId, score]) => ({ chunkId, score }))
        const confidence = direct.length > 0
          ? Math.max(...direct.map((id) => directWeights.get(id) ?? 0))
          : time !== null
          ? timeOnlyConfidence
          : 0
        return { hits, confidence, ...(notice === undefined ? {} : { notice }) }
      }, Effect.orDie)

      return GraphSearch.of({ cues, search })
    })
  )
}
