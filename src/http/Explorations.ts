import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { BadRequest, httpError, NotFound, ServiceUnavailable, ValidationFailed } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { Explorations, type ExplorationsFailure } from "../services/Explorations.ts"
import { AuthenticationLive } from "./Authentication.ts"

/** Another user's exploration, source or node is answered exactly like a missing one. */
const explorationsFailure = (failure: ExplorationsFailure) => {
  const reason = failure.reason
  switch (reason._tag) {
    case "ExplorationNotFound":
      return httpError(NotFound, "exploration_not_found", "No such exploration")
    case "SourceNotFound":
      return httpError(NotFound, "source_not_found", `No such source: ${reason.sourceId}`)
    case "NodeNotFound":
      return httpError(NotFound, "node_not_found", `No such node in these sources: ${reason.nodeId}`)
    case "InvalidCursor":
      return httpError(BadRequest, "invalid_cursor", "The cursor is not one this API returned")
    case "InvalidQuery":
      return ValidationFailed.create(reason.issues)
    case "SearchUnavailable":
      return reason.reason._tag === "RerankUnavailable"
        ? httpError(ServiceUnavailable, "rerank_unavailable", `Reranking is unavailable: ${reason.reason.reason}`)
        : reason.reason._tag === "DenseUnavailable"
        ? httpError(ServiceUnavailable, "dense_unavailable", `Vector search is unavailable: ${reason.reason.reason}`)
        : httpError(NotFound, "source_not_found", `No such source: ${reason.reason.sourceId}`)
  }
}

export const ExplorationsHandlers = HttpApiBuilder.group(
  Api,
  "explorations",
  Effect.fn(function*(handlers) {
    const explorations = yield* Explorations
    const asUser = <A>(work: (owner: CurrentUser["Service"]["id"]) => Effect.Effect<A, ExplorationsFailure>) =>
      Effect.flatMap(CurrentUser, (user) => work(user.id)).pipe(Effect.mapError(explorationsFailure))
    return handlers
      .handle("create", ({ payload }) => asUser((owner) => explorations.create(owner, payload)))
      .handle("list", ({ query }) =>
        asUser((owner) => explorations.list(owner, { limit: query.limit ?? 20, cursor: query.cursor })))
      .handle("get", ({ params }) => asUser((owner) => explorations.get(owner, params.exploration_id)))
      .handle("rename", ({ params, payload }) =>
        asUser((owner) => explorations.rename(owner, params.exploration_id, payload.title)))
      .handle("remove", ({ params }) =>
        asUser((owner) =>
          Effect.as(explorations.remove(owner, params.exploration_id), { id: params.exploration_id, deleted: true })
        ))
      .handle("replay", ({ params }) => asUser((owner) => explorations.replay(owner, params.exploration_id)))
  })
).pipe(Layer.provide(AuthenticationLive))
