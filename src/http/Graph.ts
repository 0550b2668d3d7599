import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/Security.ts"
import { Graph } from "../stores/Graph.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { graphFailure } from "./failures.ts"

export const GraphHandlers = HttpApiBuilder.group(
  Api,
  "graph",
  Effect.fn(function*(handlers) {
    const graph = yield* Graph
    return handlers
      .handle("entities", ({ params, query }) =>
        Effect.flatMap(CurrentUser, (user) =>
          graph.listEntities(user.id, params.source_id, {
            kind: query.kind,
            q: query.q,
            sort: query.sort,
            limit: query.limit ?? 20,
            cursor: query.cursor
          })).pipe(Effect.catch(graphFailure)))
      .handle("entity", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => graph.getEntity(user.id, params.source_id, params.entity_id)).pipe(
          Effect.catch(graphFailure)
        ))
      .handle("events", ({ params, query }) =>
        Effect.flatMap(CurrentUser, (user) =>
          graph.listEvents(user.id, params.source_id, {
            from: query.from,
            to: query.to,
            entityId: query.entity_id,
            kind: query.kind,
            limit: query.limit ?? 20,
            cursor: query.cursor
          })).pipe(Effect.catch(graphFailure)))
      .handle("graph", ({ query }) =>
        Effect.flatMap(CurrentUser, (user) =>
          graph.graph(user.id, {
            sourceIds: query.source_ids,
            seedEntityId: query.seed_entity_id,
            seedEventId: query.seed_event_id,
            depth: query.depth,
            limit: query.limit
          })).pipe(Effect.catch(graphFailure)))
  })
).pipe(Layer.provide(AuthenticationLive))
