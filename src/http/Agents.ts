import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/Security.ts"
import type { UserId } from "../domain/User.ts"
import { Agents, type AgentsFailure } from "../services/Agents.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { agentsFailure } from "./failures.ts"

/** Runs `use` as the signed-in user, answering agent failures with their HTTP errors. */
const asUser = <A, R>(use: (owner: UserId) => Effect.Effect<A, AgentsFailure, R>) =>
  Effect.flatMap(CurrentUser, (user) => use(user.id)).pipe(Effect.catch(agentsFailure))

const page = (query: { readonly limit?: number | undefined; readonly cursor?: string | undefined }) => ({
  limit: query.limit ?? 20,
  cursor: query.cursor
})

export const AgentsHandlers = HttpApiBuilder.group(
  Api,
  "agents",
  Effect.fn(function*(handlers) {
    const agents = yield* Agents
    return handlers
      .handle("create", ({ payload }) => asUser((owner) => agents.create(owner, payload)))
      .handle("list", ({ query }) => asUser((owner) => agents.list(owner, page(query))))
      .handle("get", ({ params }) => asUser((owner) => agents.get(owner, params.agent_id)))
      .handle("update", ({ params, payload }) => asUser((owner) => agents.update(owner, params.agent_id, payload)))
      .handle("remove", ({ params }) => asUser((owner) => agents.remove(owner, params.agent_id)))
      .handle("getBindings", ({ params }) => asUser((owner) => agents.getBindings(owner, params.agent_id)))
      .handle("putBindings", ({ params, payload }) =>
        asUser((owner) => agents.putBindings(owner, params.agent_id, payload.source_ids)))
      .handle("createConversation", ({ params, payload }) =>
        asUser((owner) => agents.createConversation(owner, params.agent_id, payload)))
      .handle("listConversations", ({ params, query }) =>
        asUser((owner) => agents.listConversations(owner, params.agent_id, page(query))))
      .handle("getConversation", ({ params }) =>
        asUser((owner) => agents.getConversation(owner, params.agent_id, params.conversation_id)))
      .handle("removeConversation", ({ params }) =>
        asUser((owner) => agents.removeConversation(owner, params.agent_id, params.conversation_id)))
      .handle("listMessages", ({ params, query }) =>
        asUser((owner) => agents.listMessages(owner, params.agent_id, params.conversation_id, page(query))))
  })
).pipe(Layer.provide(AuthenticationLive))
