import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/Security.ts"
import { Documents } from "../services/Documents.ts"
import { Sources } from "../services/Sources.ts"
import { Syncs } from "../services/Syncs.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { documentsFailure, sourcesFailure } from "./failures.ts"

export const SourcesHandlers = HttpApiBuilder.group(
  Api,
  "sources",
  Effect.fn(function*(handlers) {
    const sources = yield* Sources
    const documents = yield* Documents
    const syncs = yield* Syncs
    return handlers
      .handle("connectors", () => Effect.succeed({ connectors: sources.connectors }))
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => sources.create(user.id, payload)).pipe(Effect.catch(sourcesFailure)))
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentUser, (user) => sources.list(user.id, { limit: query.limit ?? 20, cursor: query.cursor }))
          .pipe(Effect.catch(sourcesFailure)))
      .handle("get", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => sources.get(user.id, params.source_id)).pipe(
          Effect.catch(sourcesFailure)
        ))
      .handle("update", ({ params, payload }) =>
        Effect.flatMap(CurrentUser, (user) => sources.update(user.id, params.source_id, payload)).pipe(
          Effect.catch(sourcesFailure)
        ))
      .handle("remove", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => sources.remove(user.id, params.source_id)).pipe(
          Effect.map((removed) => ({ id: params.source_id, removed })),
          Effect.catch(sourcesFailure)
        ))
      .handle("sync", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => syncs.start(user.id, params.source_id)).pipe(
          Effect.catch(sourcesFailure)
        ))
      .handle("chunks", ({ params, query }) =>
        Effect.flatMap(CurrentUser, (user) =>
          documents.chunks(user.id, params.source_id, { limit: query.limit ?? 20, cursor: query.cursor })).pipe(
            Effect.catch(documentsFailure)
          ))
  })
).pipe(Layer.provide(AuthenticationLive))
