import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { TimelineOut, TimelineQuery } from "../domain/Timeline.ts"
import { NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

export class TimelineApi extends HttpApiGroup.make("timeline")
  .add(
    HttpApiEndpoint.get("timeline", "/universe/timeline", {
      query: TimelineQuery,
      success: TimelineOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Dated events bucketed by time",
      description: "Counts the events of ready documents (their current version) per calendar bucket (UTC; weeks " +
        "start on Monday) and lists each bucket's top events. Precision-aware: an event sits in a bucket only when " +
        "its whole time fits in it; an event known only to the month or year on a finer timeline, or one spanning " +
        "two buckets, is counted under coarser in its own period at its own precision, never on the first day of " +
        "it. Undated events are counted apart. granularity auto (default) takes the finest of day, week, month, " +
        "year giving at most 120 buckets over the window or the events' span; an explicit granularity making more " +
        "than 2,000 buckets over that span is 422. from must be before to (422). source_ids: comma-separated and/or " +
        "repeated, at most 256, default every source of the caller; a source you do not own is 404 " +
        "source_not_found, an entity outside them 404 entity_not_found, an unknown community 404 " +
        "community_not_found. Example: GET /api/v1/universe/timeline?granularity=month&from=2021-01-01&to=2022-01-01"
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Universe timeline",
    description: "The knowledge universe's events over time"
  }))
{}
