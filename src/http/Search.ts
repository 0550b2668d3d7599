import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { httpError, NotFound, ServiceUnavailable } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { type RetrieverFailure, Retriever, type SearchInput } from "../services/Retriever.ts"
import { AuthenticationLive } from "./Authentication.ts"

const retrieverFailure = (failure: RetrieverFailure) =>
  failure.reason._tag === "SourceNotFound"
    ? httpError(NotFound, "source_not_found", `No such source: ${failure.reason.sourceId}`)
    : httpError(ServiceUnavailable, "dense_unavailable", `Vector search is unavailable: ${failure.reason.reason}`)

export const SearchHandlers = HttpApiBuilder.group(
  Api,
  "search",
  Effect.fn(function*(handlers) {
    const retriever = yield* Retriever
    const run = (input: Omit<SearchInput, "owner">) =>
      Effect.flatMap(CurrentUser, (user) => retriever.search({ ...input, owner: user.id })).pipe(
        Effect.mapError(retrieverFailure)
      )
    return handlers
      .handle("search", ({ payload }) =>
        run({
          query: payload.query,
          strategy: payload.strategy ?? "multi",
          topK: payload.top_k ?? 10,
          sourceIds: payload.source_ids,
          saveExploration: payload.save_exploration ?? false
        }))
      .handle("searchSource", ({ params, payload }) =>
        run({
          query: payload.query,
          strategy: payload.strategy ?? "multi",
          topK: payload.top_k ?? 10,
          sourceIds: [params.source_id],
          saveExploration: false
        }))
  })
).pipe(Layer.provide(AuthenticationLive))
