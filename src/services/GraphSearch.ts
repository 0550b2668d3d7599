import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { editDistance, fuzzLimit, queryCues } from "../retrieval/queryGraph.ts"

export interface GraphHit {
  readonly chunkId: string
  readonly score: number
}

/** Score of an event per query entity it involves (direct), and per entity one hop away (multi-hop). */
const directWeight = 1
const hopWeight = 0.5
/** An event inside the query's time gets this added; one with a time outside it keeps this share of its score. */
const timeBoost = 1
const outsideTimeShare = 0.25
/** Bounds on the work one query may do. */
const maxEntities = 20
const maxEvents = 500
const fuzzyCandidates = 2000

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
 * A time expression in the query ("in 2019", "before March 2020", "last week") boosts events inside it and
 * lowers those outside; a query with a time but no known entity lists the events of that time.
 */
export class GraphSearch extends Context.Service<GraphSearch, {
  readonly search: (
    query: string,
    sourceIds: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<GraphHit>>
}>()("engram/GraphSearch") {
  static readonly layer = Layer.effect(
    GraphSearch,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

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
          return [...ids].slice(0, maxEntities)
        })

      /** Visible events (their document ready, this version) of the entities, with their chunks. */
      const eventsOf = (entityIds: ReadonlyArray<string>) =>
        entityIds.length === 0 ? Effect.succeed([] as ReadonlyArray<EventRow>) : sql<EventRow>`
          SELECT e.id AS event_id, p.entity_id, c.chunk_id, e.time_start, e.time_end
          FROM event_participants p
          JOIN events e ON e.id = p.event_id
          JOIN documents d ON d.id = e.document_id AND d.active_version = e.version AND d.status = 'ready'
          JOIN event_chunks c ON c.event_id = e.id
          WHERE p.entity_id = ANY(${entityIds}::text[])
          ORDER BY e.id, p.entity_id, c.chunk_id
          LIMIT ${maxEvents * 4}`

      const search = Effect.fn("GraphSearch.search")(function*(
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number
      ) {
        if (sourceIds.length === 0) return []
        const cues = queryCues(query, new Date(yield* Clock.currentTimeMillis))
        const direct = yield* matchEntities(cues.names, sourceIds)
        const scores = new Map<string, { score: number; start: Date | null; end: Date | null; chunks: Set<string> }>()
        const add = (rows: ReadonlyArray<EventRow>, weight: number, counted: Set<string>) => {
          for (const row of rows) {
            const key = `${row.event_id}`
            const entry = scores.get(key) ?? { score: 0, start: row.time_start, end: row.time_end, chunks: new Set() }
            entry.chunks.add(row.chunk_id)
            const pair = `${row.event_id}/${row.entity_id}`
            if (!counted.has(pair)) {
              counted.add(pair)
              entry.score += weight
            }
            scores.set(key, entry)
          }
        }
        const counted = new Set<string>()
        const directRows = yield* eventsOf(direct)
        add(directRows, directWeight, counted)
        if (direct.length > 0) {
          // One hop: the other participants of those events, and their own events.
          const neighbours = yield* sql<{ entity_id: string }>`
            SELECT DISTINCT p.entity_id FROM event_participants p
            WHERE p.event_id = ANY(${[...new Set(directRows.map((row) => row.event_id))]}::text[])
              AND NOT p.entity_id = ANY(${direct}::text[])
            ORDER BY p.entity_id
            LIMIT ${maxEntities}`
          add(yield* eventsOf(neighbours.map((row) => row.entity_id)), hopWeight, counted)
        }
        if (cues.time !== null) {
          const from = cues.time.start === null ? null : new Date(cues.time.start)
          const to = cues.time.end === null ? null : new Date(cues.time.end)
          const inside = (start: Date | null, end: Date | null) =>
            start !== null && (to === null || start < to) && (from === null || (end ?? start) > from)
          if (direct.length === 0) {
            const timed = yield* sql<EventRow>`
              SELECT e.id AS event_id, '' AS entity_id, c.chunk_id, e.time_start, e.time_end
              FROM events e
              JOIN documents d ON d.id = e.document_id AND d.active_version = e.version AND d.status = 'ready'
              JOIN event_chunks c ON c.event_id = e.id
              WHERE e.source_id IN ${sql.in(sourceIds)} AND e.time_start IS NOT NULL
                ${to === null ? sql`` : sql`AND e.time_start < ${to}`}
                ${from === null ? sql`` : sql`AND coalesce(e.time_end, e.time_start) > ${from}`}
              ORDER BY e.time_start, e.id
              LIMIT ${maxEvents}`
            add(timed, 0, counted)
          }
          for (const entry of scores.values()) {
            if (inside(entry.start, entry.end)) entry.score += timeBoost
            else if (entry.start !== null) entry.score *= outsideTimeShare
          }
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
        return [...chunkScores.entries()]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, limit)
          .map(([chunkId, score]) => ({ chunkId, score }))
      }, Effect.orDie)

      return GraphSearch.of({ search })
    })
  )
}
