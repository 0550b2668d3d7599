import { Context, Data, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { instantOf } from "../domain/Instant.ts"
import type { Granularity, TimelineBucket, TimelineEvent, TimelineOut } from "../domain/Timeline.ts"
import type { UserId } from "../domain/User.ts"
import type { Issue } from "./Sources.ts"
import { searchable } from "../stores/Searchable.ts"
import { ownedSources, sourceIdList } from "../stores/SourceAccess.ts"
import { bucketsOver, maxBuckets, rankLive, rankStored, storedState, units } from "../stores/Timeline.ts"

export type TimelineError =
  | { readonly _tag: "SourceNotFound"; readonly sourceId: string }
  | { readonly _tag: "EntityNotFound" }
  | { readonly _tag: "CommunityNotFound" }
  | { readonly _tag: "InvalidQuery"; readonly issues: ReadonlyArray<Issue> }

export class TimelineFailure extends Data.TaggedError("TimelineFailure")<{ readonly reason: TimelineError }> {}

const fail = (reason: TimelineError) => Effect.fail(new TimelineFailure({ reason }))

export interface TimelineOptions {
  /** Each element may itself be comma-separated; undefined means every source of the owner. */
  readonly sourceIds?: ReadonlyArray<string> | undefined
  readonly entityId?: string | undefined
  readonly communityId?: string | undefined
  /** ISO instants; an event counts when its [start, end) overlaps [from, to). */
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly granularity?: Granularity | "auto" | undefined
  /** Top events per bucket, 0..20. */
  readonly limit?: number | undefined
}

const maxSources = 256
/** auto takes the finest unit with at most this many buckets over the span. */
const autoBuckets = 120

interface EventDetailRow {
  readonly id: string
  readonly source_id: string
  readonly document_id: string
  readonly statement: string
  readonly kind: string
  readonly time_start: Date
  readonly time_end: Date
  readonly time_precision: string | null
  readonly time_text: string | null
  readonly time_relative: boolean
  readonly confidence: number
  readonly participant_count: number | string
}

/**
 * Dated events bucketed by calendar unit, in SQL. An event sits in the bucket of its start when its whole time
 * fits in it; otherwise (known only to the year on a month timeline, or a week across two months) it is counted
 * in its own period at its own precision, so nothing known to the year lands on 1 January.
 */
export class Timeline extends Context.Service<Timeline, {
  readonly timeline: (owner: UserId, options: TimelineOptions) => Effect.Effect<TimelineOut, TimelineFailure>
}>()("engram/Timeline") {
  static readonly layer = Layer.effect(
    Timeline,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const timelineSources = Effect.fnUntraced(function*(owner: UserId, requested: ReadonlyArray<string> | undefined) {
        if (requested === undefined) return yield* ownedSources(sql, owner, undefined).pipe(Effect.orDie)
        const ids = sourceIdList(requested)
        if (ids.length === 0 || ids.length > maxSources) {
          return yield* fail({
            _tag: "InvalidQuery",
            issues: [{ path: "query.source_ids", message: `must name 1 to ${maxSources} sources` }]
          })
        }
        return yield* ownedSources(sql, owner, ids).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) => fail({ _tag: "SourceNotFound", sourceId }))
        )
      })

      /** First and last dated event: per source by index, or among the events `participants` selects. */
      const extent = (sourceIds: ReadonlyArray<string>, participants: Statement.Fragment | null) =>
        participants === null
          ? sql<{ first: Date | null; last: Date | null }>`
              SELECT min(f.time_start) AS first, max(l.time_start) AS last
              FROM unnest(${sourceIds}::text[]) AS s(id)
              LEFT JOIN LATERAL (
                SELECT ev.time_start FROM events ev
                JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
                WHERE ev.source_id = s.id AND ev.time_start IS NOT NULL ORDER BY ev.time_start LIMIT 1) f ON true
              LEFT JOIN LATERAL (
                SELECT ev.time_start FROM events ev
                JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
                WHERE ev.source_id = s.id AND ev.time_start IS NOT NULL ORDER BY ev.time_start DESC LIMIT 1) l ON true`
          : sql<{ first: Date | null; last: Date | null }>`
              SELECT min(ev.time_start) AS first, max(ev.time_start) AS last
              FROM events ev
              JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
              WHERE ev.id IN (${participants}) AND ev.source_id = ANY(${sourceIds}::text[])`

      /** The unit for the span: the requested one (422 when it makes too many buckets) or the auto choice. */
      const chooseUnit = (requested: Granularity | "auto", spanMs: number) => {
        if (requested !== "auto") {
          return bucketsOver(spanMs, requested) > maxBuckets
            ? fail({
              _tag: "InvalidQuery",
              issues: [{
                path: "query.granularity",
                message: `${requested} buckets over this span would be more than ${maxBuckets}: choose a coarser ` +
                  "granularity or a narrower window (from, to)"
              }]
            })
            : Effect.succeed(requested)
        }
        return Effect.succeed(units.find((unit) => bucketsOver(spanMs, unit) <= autoBuckets) ?? "year")
      }

      const timeline = Effect.fn("Timeline.timeline")(function*(owner: UserId, options: TimelineOptions) {
        const from = instantOf(options.from)
        const to = instantOf(options.to)
        if (from !== null && to !== null && from >= to) {
          return yield* fail({ _tag: "InvalidQuery", issues: [{ path: "query.to", message: "must be after from" }] })
        }
        const sourceIds = yield* timelineSources(owner, options.sourceIds)
        const entityId = options.entityId
        if (entityId !== undefined) {
          const found = sourceIds.length === 0 ? [] : yield* sql<{ id: string }>`
            SELECT id FROM entities WHERE id = ${entityId} AND source_id = ANY(${sourceIds}::text[])`.pipe(Effect.orDie)
          if (found.length === 0) return yield* fail({ _tag: "EntityNotFound" })
        }
        // A community (`community:<source>:<n>`, from the manifest) selects the events of its member entities.
        let community: { readonly sourceId: string; readonly number: number } | null = null
        if (options.communityId !== undefined) {
          const match = /^community:(.+):(\d{1,9})$/.exec(options.communityId)
          const rows = match === null || !sourceIds.includes(match[1]!) ? [] : yield* sql<{ community: number }>`
            SELECT community FROM universe_communities WHERE source_id = ${match[1]!} AND community = ${Number(match[2])}`
            .pipe(Effect.orDie)
          if (rows.length === 0) return yield* fail({ _tag: "CommunityNotFound" })
          community = { sourceId: match![1]!, number: Number(match![2]) }
        }
        const limit = options.limit ?? 3

        const participants: Statement.Fragment | null = entityId !== undefined
          ? sql`SELECT p.event_id FROM event_participants p WHERE p.entity_id = ${entityId}`
          : community !== null
          ? sql`SELECT p.event_id FROM event_participants p JOIN universe_entities u ON u.entity_id = p.entity_id
              WHERE u.source_id = ${community.sourceId} AND u.community = ${community.number}`
          : null
        const selected: Statement.Fragment = sql`ev.source_id = ANY(${sourceIds}::text[])
          ${participants === null ? sql`` : sql`AND ev.id IN (${participants})`}`
        // The whole span of whole sources is read from the timeline the universe's recompute stores, while it is
        // current; anything narrower (a window, an entity, a community) ranks the events live.
        const state = participants === null && from === null && to === null && sourceIds.length > 0
          ? yield* storedState(sql, sourceIds)
          : null
        const stored = state?.current === true ? state : null
        const undated = stored !== null ? stored.undated : Number(
          (yield* sql<{ count: number | string }>`
            SELECT count(*) AS count FROM events ev
            JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
            WHERE ${selected} AND ev.time_start IS NULL`.pipe(Effect.orDie))[0]?.count ?? 0
        )

        let spanMs: number
        if (from !== null && to !== null) {
          spanMs = to.getTime() - from.getTime()
        } else {
          const bounds = stored ?? (yield* extent(sourceIds, participants).pipe(Effect.orDie))[0]
          const first = from ?? bounds?.first ?? null
          const last = to ?? bounds?.last ?? null
          spanMs = first === null || last === null ? 0 : Math.max(0, last.getTime() - first.getTime())
        }
        const unit = yield* chooseUnit(options.granularity ?? "auto", spanMs)
        const ranked = sourceIds.length === 0
          ? []
          : stored !== null
          ? yield* rankStored(sql, sourceIds, unit, limit)
          : yield* rankLive(sql, { selected, from, to, unit, keep: limit })
        const topIds = ranked.filter((row) => Number(row.rank) <= limit).map((row) => row.id)
        const details = topIds.length === 0 ? [] : yield* sql<EventDetailRow>`
          SELECT ev.id, ev.source_id, ev.document_id, ev.statement, ev.kind, ev.time_start,
            coalesce(ev.time_end, ev.time_start) AS time_end, ev.time_precision, ev.time_text, ev.time_relative,
            ev.confidence, (SELECT count(*) FROM event_participants p WHERE p.event_id = ev.id) AS participant_count
          FROM events ev WHERE ev.id = ANY(${topIds}::text[])`.pipe(Effect.orDie)
        const detailById = new Map(details.map((row) => [row.id, row]))
        const rows = ranked.map((row) => ({ ...row, detail: detailById.get(row.id) }))

        const buckets: Array<TimelineBucket & { events: Array<TimelineEvent> }> = []
        const coarser: Array<TimelineBucket & { events: Array<TimelineEvent> }> = []
        let current: (TimelineBucket & { events: Array<TimelineEvent> }) | undefined
        let currentKey = ""
        let dated = 0
        let spanStart: Date | null = null
        let spanEnd: Date | null = null
        for (const row of rows) {
          const key = `${row.bucket_start.toISOString()}|${row.bucket_end.toISOString()}`
          if (key !== currentKey) {
            currentKey = key
            current = {
              start: row.bucket_start.toISOString(),
              end: row.bucket_end.toISOString(),
              precision: row.bucket_precision,
              count: Number(row.count),
              events: []
            }
            dated += current.count
            ;(row.fits ? buckets : coarser).push(current)
            if (spanStart === null || row.bucket_start < spanStart) spanStart = row.bucket_start
            if (spanEnd === null || row.bucket_end > spanEnd) spanEnd = row.bucket_end
          }
          const event = row.detail
          if (Number(row.rank) <= limit && event !== undefined) {
            current!.events.push({
              id: event.id,
              source_id: event.source_id,
              document_id: event.document_id,
              statement: event.statement,
              kind: event.kind,
              time: {
                start: event.time_start.toISOString(),
                end: event.time_end.toISOString(),
                precision: event.time_precision ?? "day",
                text: event.time_text,
                relative: event.time_relative
              },
              confidence: event.confidence,
              participant_count: Number(event.participant_count)
            })
          }
        }
        return {
          granularity: unit,
          from: from?.toISOString() ?? null,
          to: to?.toISOString() ?? null,
          span: spanStart === null || spanEnd === null
            ? null
            : { start: spanStart.toISOString(), end: spanEnd.toISOString() },
          dated,
          undated,
          buckets,
          coarser
        } satisfies TimelineOut
      })

      return Timeline.of({ timeline })
    })
  )
}
