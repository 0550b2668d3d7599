import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/Security.ts"
import { Universe } from "../services/Universe.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { universeFailure } from "./failures.ts"

export const UniverseHandlers = HttpApiBuilder.group(
  Api,
  "universe",
  Effect.fn(function*(handlers) {
    const universe = yield* Universe
    return handlers
      .handle("manifest", ({ query }) =>
        Effect.flatMap(CurrentUser, (user) => universe.manifest(user.id, query.source_ids)).pipe(
          Effect.catch(universeFailure)
        ))
      .handle("expand", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => universe.expand(user.id, payload)).pipe(Effect.catch(universeFailure)))
      .handle("node", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => universe.node(user.id, params.node_id)).pipe(
          Effect.catch(universeFailure)
        ))
  })
).pipe(Layer.provide(AuthenticationLive))
