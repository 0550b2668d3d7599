import { Schema } from "effect"
import { EventTime, GraphQuery, IsoInstant } from "./Graph.ts"
import { IdText } from "./Text.ts"

/** The calendar units a timeline is bucketed by (UTC; weeks start on Monday, as ISO 8601 and date_trunc have them). */
export const Granularity = Schema.Literals(["day", "week", "month", "year"])
export type Granularity = typeof Granularity.Type

export const TimelineQuery = {
  source_ids: GraphQuery.source_ids,
  entity_id: Schema.optionalKey(IdText).annotate({
    description: "Only the events this entity takes part in (404 entity_not_found outside the sources)"
  }),
  community_id: Schema.optionalKey(IdText).annotate({
    description: "Only the events of this community's entities (404 community_not_found for an unknown community)"
  }),
  from: Schema.optionalKey(IsoInstant).annotate({
    description: "Keep events whose time ends after this instant",
    examples: ["2020-01-01"]
  }),
  to: Schema.optionalKey(IsoInstant).annotate({
    description: "Keep events whose time starts before this instant; must be after from",
    examples: ["2025-01-01T00:00:00Z"]
  }),
  granularity: Schema.optionalKey(Schema.Literals(["day", "week", "month", "year", "auto"])).annotate({
    description: "Bucket size; auto (default) takes the finest unit giving at most 120 buckets over the span"
  }),
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(
      Schema.isInt(),
      Schema.isBetween({ minimum: 0, maximum: 20 }, { message: "must be an integer from 0 to 20" })
    )
  ).annotate({ description: "Top events listed per bucket, 0 to 20 (default 3)" })
}

export const TimelineEvent = Schema.Struct({
  id: Schema.String,
  source_id: Schema.String,
  document_id: Schema.String,
  statement: Schema.String,
  kind: Schema.String.annotate({ description: "The main verb's lemma" }),
  time: EventTime,
  confidence: Schema.Number,
  participant_count: Schema.Int
}).annotate({ identifier: "TimelineEvent" })
export type TimelineEvent = typeof TimelineEvent.Type

export const TimelineBucket = Schema.Struct({
  start: Schema.String.annotate({ description: "ISO 8601 UTC, inclusive" }),
  end: Schema.String.annotate({ description: "ISO 8601 UTC, exclusive" }),
  precision: Schema.String.annotate({
    description: "The bucket's unit: the granularity in buckets; in coarser, the events' own precision " +
      "(week, month, quarter, year, decade)"
  }),
  count: Schema.Int.annotate({ description: "Events in the bucket" }),
  events: Schema.Array(TimelineEvent).annotate({
    description: "The top events: highest confidence first, then earliest, then by id"
  })
}).annotate({ identifier: "TimelineBucket" })
export type TimelineBucket = typeof TimelineBucket.Type

export const TimelineOut = Schema.Struct({
  granularity: Granularity.annotate({ description: "The unit used (auto resolved)" }),
  from: Schema.NullOr(Schema.String).annotate({ description: "The window's start as applied, ISO 8601 UTC" }),
  to: Schema.NullOr(Schema.String).annotate({ description: "The window's end as applied, ISO 8601 UTC" }),
  span: Schema.NullOr(Schema.Struct({ start: Schema.String, end: Schema.String })).annotate({
    description: "From the start of the earliest bucket to the end of the latest (in buckets or coarser); null " +
      "when no dated event is counted"
  }),
  dated: Schema.Int.annotate({ description: "Dated events counted, in buckets and coarser together" }),
  undated: Schema.Int.annotate({
    description: "Events of the same selection without a time; counted apart, whatever the window"
  }),
  buckets: Schema.Array(TimelineBucket).annotate({
    description: "Non-empty buckets of the granularity, oldest first, holding the events whose whole time falls " +
      "inside one bucket"
  }),
  coarser: Schema.Array(TimelineBucket).annotate({
    description: "Events known less precisely than a bucket (a year-only event on a month timeline) or straddling " +
      "two buckets, grouped by their own period [start, end) (precision: that of its top event), oldest first. " +
      "They are never put on the bucket of their first day (1 January, the 1st of the month)."
  })
}).annotate({
  identifier: "TimelineOut",
  examples: [{
    granularity: "month",
    from: null,
    to: null,
    span: { start: "2021-01-01T00:00:00.000Z", end: "2022-01-01T00:00:00.000Z" },
    dated: 2,
    undated: 1,
    buckets: [{
      start: "2021-03-01T00:00:00.000Z",
      end: "2021-04-01T00:00:00.000Z",
      precision: "month",
      count: 1,
      events: [{
        id: "5b0c8d1e2f3a4b5c6d7e8f9a0b1c2d3e",
        source_id: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        document_id: "9a8b7c6d-5e4f-3a2b-1c0d-ef1234567890",
        statement: "Acme Corporation acquired Globex in Berlin",
        kind: "acquire",
        time: {
          start: "2021-03-03T00:00:00.000Z",
          end: "2021-03-04T00:00:00.000Z",
          precision: "day",
          text: "March 3, 2021",
          relative: false
        },
        confidence: 0.8,
        participant_count: 3
      }]
    }],
    coarser: [{
      start: "2021-01-01T00:00:00.000Z",
      end: "2022-01-01T00:00:00.000Z",
      precision: "year",
      count: 1,
      events: []
    }]
  }]
})
export type TimelineOut = typeof TimelineOut.Type
