import { Effect, Layer, Option, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { BadGateway, Conflict, httpError, NotFound } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { type AskInput, type RunEvent, type RunsFailure, Runs } from "../services/Runs.ts"
import { AuthenticationLive } from "./Authentication.ts"

export const runsFailure = (failure: RunsFailure) => {
  const reason = failure.reason
  switch (reason._tag) {
    case "AgentNotFound":
      return httpError(NotFound, "agent_not_found", `No such agent: ${reason.id}`)
    case "ConversationNotFound":
      return httpError(NotFound, "conversation_not_found", `No such conversation: ${reason.id}`)
    case "RunNotFound":
      return httpError(NotFound, "run_not_found", `No such run: ${reason.id}`)
    case "RunFinished":
      return httpError(Conflict, "run_finished", `The run is not running: it is ${reason.status}`)
  }
}

const encoder = new TextEncoder()

/** One server-sent event per run event: the event name is its type, the data its JSON payload. */
const serverSentEvent = (event: RunEvent) => {
  const { type, ...data } = event
  const payload = type === "done" || type === "run.started" ? event.run : data
  return encoder.encode(`event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`)
}

export const eventStreamHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/** The run's final state once its events have all been produced. */
export const finalRun = (events: Stream.Stream<RunEvent>) =>
  Stream.runLast(events).pipe(
    Effect.flatMap((last) =>
      Option.isSome(last) && last.value.type === "done" ? Effect.succeed(last.value.run) : Effect.die("a run ended without its final state")
    )
  )

export const RunsHandlers = HttpApiBuilder.group(
  Api,
  "runs",
  Effect.fn(function*(handlers) {
    const runs = yield* Runs

    const answer = (input: Omit<AskInput, "owner">, stream: boolean) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const events = yield* runs.start({ ...input, owner: user.id }).pipe(Effect.mapError(runsFailure))
        if (stream) {
          return HttpServerResponse.stream(Stream.map(events, serverSentEvent), {
            contentType: "text/event-stream",
            headers: eventStreamHeaders
          })
        }
        const run = yield* finalRun(events)
        if (run.status === "failed") {
          return yield* httpError(BadGateway, run.error?.code ?? "llm_failed", `${run.error?.message} (run ${run.id})`)
        }
        return run
      })

    return handlers
      .handle("ask", ({ params, payload }) =>
        answer(
          { agentId: params.agent_id, question: payload.question, conversationId: payload.conversation_id },
          payload.stream ?? false
        ))
      .handle("postMessage", ({ params, payload }) =>
        answer(
          { agentId: params.agent_id, question: payload.content, conversationId: params.conversation_id },
          payload.stream ?? false
        ))
      .handle("getRun", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => runs.get(user.id, params.agent_id, params.run_id)).pipe(
          Effect.mapError(runsFailure)
        ))
      .handle("cancelRun", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => runs.cancel(user.id, params.agent_id, params.run_id)).pipe(
          Effect.mapError(runsFailure)
        ))
  })
).pipe(Layer.provide(AuthenticationLive))
