import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { httpError, NotFound, ServiceUnavailable, ValidationFailed } from "../api/Errors.ts"
import type { Strategy } from "../domain/Search.ts"
import { CurrentUser } from "../api/Security.ts"
import { type RetrieverFailure, Retriever, type SearchInput } from "../services/Retriever.ts"
import { AuthenticationLive } from "./Authentication.ts"

const retrieverFailure = (failure: RetrieverFailure) => {
  switch (failure.reason._tag) {
    case "SourceNotFound":
      return httpError(NotFound, "source_not_found", `No such source: ${failure.reason.sourceId}`)
    case "DenseUnavailable":
      return httpError(ServiceUnavailable, "dense_unavailable", `Vector search is unavailable: ${failure.reason.reason}`)
    case "RerankUnavailable":
      return httpError(ServiceUnavailable, "rerank_unavailable", `Reranking is unavailable: ${failure.reason.reason}`)
  }
}

interface SearchPayload {
  readonly query: string
  readonly strategy?: Strategy
  readonly top_k?: number
  readonly rerank?: boolean
}

/** The fields both search routes share, with their defaults; rerank is a multi-only option. */
const common = (payload: SearchPayload) => {
  const strategy = payload.strategy ?? "multi"
  return payload.rerank === true && strategy !== "multi"
    ? Effect.fail(ValidationFailed.create([{ path: "body.rerank", message: "rerank applies to strategy multi only" }]))
    : Effect.succeed({ query: payload.query, strategy, topK: payload.top_k ?? 10, rerank: payload.rerank })
}

export const SearchHandlers = HttpApiBuilder.group(
  Api,
  "search",
  Effect.fn(function*(handlers) {
    const retriever = yield* Retriever
    const run = (payload: SearchPayload, scope: Pick<SearchInput, "sourceIds" | "saveExploration">) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const input = yield* common(payload)
        return yield* retriever.search({ ...input, ...scope, owner: user.id }).pipe(Effect.mapError(retrieverFailure))
      })
    return handlers
      .handle("search", ({ payload }) =>
        run(payload, { sourceIds: payload.source_ids, saveExploration: payload.save_exploration ?? false }))
      .handle("searchSource", ({ params, payload }) =>
        run(payload, { sourceIds: [params.source_id], saveExploration: false }))
  })
).pipe(Layer.provide(AuthenticationLive))
