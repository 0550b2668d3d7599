import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import type { Granularity } from "../domain/Timeline.ts"
import { searchable } from "./Searchable.ts"

/** An explicit granularity over a span that would hold more buckets than this is refused (422). */
export const maxBuckets = 2000
/** The most top events a request lists per bucket, and so what the aggregate keeps. */
export const maxTopEvents = 20

const day = 86_400_000
/** The longest each unit can be, so span / unit never undercounts the buckets. */
const unitLength: Record<Granularity, number> = { day, week: 7 * day, month: 31 * day, year: 366 * day }
export const units: ReadonlyArray<Granularity> = ["day", "week", "month", "year"]

/** How many buckets of `unit` a span touches at most (one more for a span not aligned to the unit). */
export const bucketsOver = (spanMs: number, unit: Granularity) => Math.ceil(spanMs / unitLength[unit]) + 1

/** One of the top events of a bucket, with the bucket's key, size and the event's rank in it. */
export interface RankedRow {
  readonly bucket_start: Date
  readonly bucket_end: Date
  readonly bucket_precision: string
  readonly fits: boolean
  readonly count: number
  readonly rank: number
  readonly id: string
}

interface Ranking {
  /** Which events: a condition on `ev` (the events row). */
  readonly selected: Statement.Fragment
  readonly from: Date | null
  readonly to: Date | null
  readonly unit: Granularity
  /** Top events kept per bucket (at least 1: the first one names the bucket's precision). */
  readonly keep: number
}

/**
 * The selected visible dated events in buckets of `unit`, each bucket's events ranked (highest confidence, then
 * earliest, then id in byte order). An event sits in the bucket of its start when its whole time fits in it;
 * otherwise (known only to the year on a month timeline, a week across two months) it is counted in its own
 * period at its own precision, so nothing known to the year lands on 1 January. The one definition of the
 * timeline's buckets: requests read it live, and the universe's recompute stores it per source.
 *
 * Ranking carries only the keys, without collation-aware text comparisons; a bucket is its period.
 */
const ranking = (sql: SqlClient.SqlClient, { from, keep, selected, to, unit }: Ranking): Statement.Fragment => {
  const step = sql.literal(`interval '1 ${unit}'`)
  const truncate = sql.literal(`'${unit}'`)
  return sql`
    WITH placed AS (
      SELECT ev.id, ev.time_start, coalesce(ev.time_end, ev.time_start) AS time_end, ev.time_precision,
        ev.confidence, date_trunc(${truncate}, ev.time_start AT TIME ZONE 'UTC') AS unit_start
      FROM events ev
      JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
      WHERE ${selected} AND ev.time_start IS NOT NULL
        ${from === null ? sql`` : sql`AND coalesce(ev.time_end, ev.time_start) > ${from}`}
        ${to === null ? sql`` : sql`AND ev.time_start < ${to}`}
    ), bucketed AS (
      SELECT id, confidence, time_start, fits,
        CASE WHEN fits THEN unit_start ELSE time_start AT TIME ZONE 'UTC' END AS bucket_start,
        CASE WHEN fits THEN unit_start + ${step} ELSE time_end AT TIME ZONE 'UTC' END AS bucket_end,
        CASE WHEN fits THEN ${unit} ELSE coalesce(time_precision, 'day') END AS bucket_precision
      FROM (SELECT placed.*, (time_end AT TIME ZONE 'UTC') <= unit_start + ${step} AS fits FROM placed) keyed
    ), ranked AS (
      SELECT id, confidence, time_start, fits, bucket_start, bucket_end, bucket_precision,
        count(*) OVER w AS count,
        row_number() OVER (w ORDER BY confidence DESC, time_start, id COLLATE "C") AS rank
      FROM bucketed
      WINDOW w AS (PARTITION BY bucket_start, bucket_end)
    )
    SELECT bucket_start AT TIME ZONE 'UTC' AS bucket_start, bucket_end AT TIME ZONE 'UTC' AS bucket_end,
      bucket_precision, fits, count, rank, id, confidence, time_start
    FROM ranked WHERE rank <= ${Math.max(keep, 1)}`
}

/** Sorting a whole source's events needs more than the default work_mem (it would spill 100,000 rows to disk). */
const withSortMemory = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) =>
  sql.withTransaction(sql`SET LOCAL work_mem = '64MB'`.pipe(Effect.andThen(effect)))

const numbered = (rows: ReadonlyArray<RankedRow>): Array<RankedRow> =>
  rows.map((row) => ({ ...row, count: Number(row.count), rank: Number(row.rank) }))

/** The ranked buckets, read live from the events: oldest bucket first, top event first. */
export const rankLive = (sql: SqlClient.SqlClient, options: Ranking) =>
  withSortMemory(
    sql,
    sql<RankedRow>`
      SELECT bucket_start, bucket_end, bucket_precision, fits, count, rank, id FROM (${ranking(sql, options)}) r
      ORDER BY bucket_start, bucket_end, rank`
  ).pipe(Effect.map(numbered), Effect.orDie)

/**
 * Replaces a source's stored timeline: for every unit its span (first to last event start) allows, each bucket's
 * count, precision and top events (with the keys they rank by, so buckets of several sources merge exactly).
 */
export const storeTimeline = (sql: SqlClient.SqlClient, sourceId: string, first: Date | null, last: Date | null) =>
  withSortMemory(
    sql,
    Effect.gen(function*() {
      yield* sql`DELETE FROM universe_timeline WHERE source_id = ${sourceId}`
      if (first === null || last === null) return
      const span = last.getTime() - first.getTime()
      for (const unit of units.filter((unit) => bucketsOver(span, unit) <= maxBuckets)) {
        const ranked = ranking(sql, {
          selected: sql`ev.source_id = ${sourceId}`,
          from: null,
          to: null,
          unit,
          keep: maxTopEvents
        })
        yield* sql`
          INSERT INTO universe_timeline (source_id, unit, bucket_start, bucket_end, precision, fits, count, top)
          SELECT ${sourceId}, ${unit}, bucket_start, bucket_end,
            max(bucket_precision) FILTER (WHERE rank = 1), bool_or(fits) FILTER (WHERE rank = 1), max(count),
            jsonb_agg(jsonb_build_object('id', id, 'confidence', confidence,
              'at', extract(epoch FROM time_start) * 1000) ORDER BY rank)
          FROM (${ranked}) r
          GROUP BY bucket_start, bucket_end`
      }
    })
  ).pipe(Effect.orDie)

/** Whether every selected source's stored timeline is current, and what it says of their events. */
export interface StoredState {
  readonly current: boolean
  readonly first: Date | null
  readonly last: Date | null
  readonly undated: number
}

export const storedState = (sql: SqlClient.SqlClient, sourceIds: ReadonlyArray<string>) =>
  sql<{ current: boolean; first: Date | null; last: Date | null; undated: number | string | null }>`
    SELECT count(u.source_id) = count(*) AND bool_and(u.computed_at IS NOT NULL AND u.dirty_since IS NULL)
        AS current,
      min(u.time_start) AS first, max(u.last_start) AS last,
      sum(u.event_count - u.dated_event_count) AS undated
    FROM unnest(${sourceIds}::text[]) AS s(id) LEFT JOIN universe_sources u ON u.source_id = s.id`.pipe(
    Effect.map(([row]): StoredState => ({
      current: row?.current === true,
      first: row?.first ?? null,
      last: row?.last ?? null,
      undated: Number(row?.undated ?? 0)
    })),
    Effect.orDie
  )

interface TopEvent {
  readonly id: string
  readonly confidence: number
  readonly at: number
}

const byRank = (a: TopEvent, b: TopEvent) =>
  b.confidence - a.confidence || a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The ranked buckets from the stored timelines of current sources: the same rows `rankLive` gives for the
 * whole span, the buckets of several sources merged (counts added, top events re-ranked).
 */
export const rankStored = (
  sql: SqlClient.SqlClient,
  sourceIds: ReadonlyArray<string>,
  unit: Granularity,
  keep: number
) =>
  sql<{
    bucket_start: Date
    bucket_end: Date
    precision: string
    fits: boolean
    count: number
    top: ReadonlyArray<TopEvent>
  }>`
    SELECT bucket_start, bucket_end, precision, fits, count,
      (SELECT jsonb_agg(t.event ORDER BY t.n) FROM jsonb_array_elements(top) WITH ORDINALITY AS t(event, n)
        WHERE t.n <= ${Math.max(keep, 1)}) AS top
    FROM universe_timeline
    WHERE source_id = ANY(${sourceIds}::text[]) AND unit = ${unit}
    ORDER BY bucket_start, bucket_end`.pipe(
    Effect.map((stored) => {
      const rows: Array<RankedRow> = []
      for (let i = 0; i < stored.length;) {
        let j = i + 1
        const start = stored[i]!.bucket_start.getTime()
        const end = stored[i]!.bucket_end.getTime()
        while (
          j < stored.length && stored[j]!.bucket_start.getTime() === start && stored[j]!.bucket_end.getTime() === end
        ) j++
        const group = stored.slice(i, j)
        // The bucket's precision and fit are its top event's, as in the live ranking.
        const named = group.reduce((best, row) => byRank(row.top[0]!, best.top[0]!) < 0 ? row : best)
        const top = group.flatMap((row) => row.top).sort(byRank).slice(0, Math.max(keep, 1))
        const count = group.reduce((sum, row) => sum + Number(row.count), 0)
        top.forEach((event, rank) =>
          rows.push({
            bucket_start: named.bucket_start,
            bucket_end: named.bucket_end,
            bucket_precision: named.precision,
            fits: named.fits,
            count,
            rank: rank + 1,
            id: event.id
          })
        )
        i = j
      }
      return rows
    }),
    Effect.orDie
  )
