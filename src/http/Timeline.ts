import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { httpError, NotFound, ValidationFailed } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { Timeline, type TimelineFailure } from "../services/Timeline.ts"
import { AuthenticationLive } from "./Authentication.ts"

/** Another user's source or entity is answered exactly like a missing one. */
const timelineFailure = (failure: TimelineFailure) => {
  switch (failure.reason._tag) {
    case "SourceNotFound":
      return httpError(NotFound, "source_not_found", `No such source: ${failure.reason.sourceId}`)
    case "EntityNotFound":
      return httpError(NotFound, "entity_not_found", "No such entity")
    case "CommunityNotFound":
      return httpError(NotFound, "community_not_found", "No such community")
    case "InvalidQuery":
      return ValidationFailed.create(failure.reason.issues)
  }
}

export const TimelineHandlers = HttpApiBuilder.group(
  Api,
  "timeline",
  Effect.fn(function*(handlers) {
    const timeline = yield* Timeline
    return handlers.handle("timeline", ({ query }) =>
      Effect.flatMap(CurrentUser, (user) =>
        timeline.timeline(user.id, {
          sourceIds: query.source_ids,
          entityId: query.entity_id,
          communityId: query.community_id,
          from: query.from,
          to: query.to,
          granularity: query.granularity,
          limit: query.limit
        })).pipe(Effect.mapError(timelineFailure)))
  })
).pipe(Layer.provide(AuthenticationLive))
