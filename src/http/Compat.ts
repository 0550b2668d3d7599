import { Clock, Effect, Layer, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { BadGateway, BadRequest, httpError } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import type { ChatCompletionRequest, ChatMessage } from "../domain/ChatCompletion.ts"
import type { RunOut } from "../domain/Run.ts"
import type { HistoryMessage } from "../llm/prompt.ts"
import { Agents } from "../services/Agents.ts"
import { type RunEvent, Runs, RunsFailure } from "../services/Runs.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { eventStreamHeaders, finalRun, runsFailure } from "./Runs.ts"

const textOf = (message: ChatMessage) =>
  typeof message.content === "string"
    ? message.content
    : (message.content ?? []).flatMap((part) => part.type === "text" && part.text !== undefined ? [part.text] : []).join("")

/** The question (the last message, from the user), the history before it and the request's system text. */
const conversation = (messages: ReadonlyArray<ChatMessage>) => {
  const last = messages[messages.length - 1]!
  const question = textOf(last).trim()
  if (last.role !== "user" || question === "") {
    return Effect.fail(httpError(BadRequest, "invalid_messages", "The last message must be a user message with text"))
  }
  const earlier = messages.slice(0, -1)
  const history = earlier.flatMap((message): Array<HistoryMessage> =>
    (message.role === "user" || message.role === "assistant") && textOf(message).trim() !== ""
      ? [{ role: message.role, content: textOf(message) }]
      : []
  )
  const system = earlier.filter((m) => m.role === "system" || m.role === "developer").map(textOf).join("\n\n")
  return Effect.succeed({ question, history, system })
}

const citationsOf = (run: RunOut) => run.citations.map((c) => ({ ...c }))

const usageOf = (run: RunOut) => {
  const prompt = run.usage?.input_tokens ?? 0
  const completion = run.usage?.output_tokens ?? 0
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

const encoder = new TextEncoder()
const data = (value: unknown) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`)

/** Run events as chat.completion.chunk server-sent events, ending with `data: [DONE]`. */
const chunks = (events: Stream.Stream<RunEvent>, agentId: string, created: number, includeUsage: boolean) => {
  let id = "chatcmpl-"
  const chunk = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
    data({ id, object: "chat.completion.chunk", created, model: agentId, choices, ...extra })
  return events.pipe(
    Stream.flatMap((event): Stream.Stream<Uint8Array> => {
      switch (event.type) {
        case "run.started":
          id = `chatcmpl-${event.run.id}`
          return Stream.make(chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]))
        case "delta":
          return Stream.make(chunk([{ index: 0, delta: { content: event.text }, finish_reason: null }]))
        case "done": {
          const run = event.run
          if (run.status === "failed") {
            return Stream.make(data({
              error: { message: run.error?.message ?? "The run failed", type: "server_error", code: "llm_failed", param: null }
            }))
          }
          const last = chunk([{ index: 0, delta: {}, finish_reason: "stop" }], { citations: citationsOf(run) })
          const usage = includeUsage ? [chunk([], { usage: usageOf(run) })] : []
          return Stream.make(last, ...usage, encoder.encode("data: [DONE]\n\n"))
        }
        default:
          return Stream.empty
      }
    })
  )
}

export const CompatHandlers = HttpApiBuilder.group(
  Api,
  "compat",
  Effect.fn(function*(handlers) {
    const runs = yield* Runs
    const agents = yield* Agents

    const complete = Effect.fn("Compat.complete")(function*(agentId: string, request: ChatCompletionRequest) {
      const user = yield* CurrentUser
      const { question, history, system } = yield* conversation(request.messages)
      const maxTokens = request.max_completion_tokens ?? request.max_tokens
      const stop = typeof request.stop === "string" ? [request.stop] : request.stop
      const events = yield* runs.start({
        owner: user.id,
        agentId,
        question,
        history,
        extraInstructions: system,
        generation: {
          ...(request.temperature === undefined || request.temperature === null ? {} : { temperature: request.temperature }),
          ...(maxTokens === undefined || maxTokens === null ? {} : { maxTokens }),
          ...(stop === undefined || stop === null ? {} : { stop })
        }
      }).pipe(Effect.mapError(runsFailure))
      const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      if (request.stream === true) {
        return HttpServerResponse.stream(
          chunks(events, agentId, created, request.stream_options?.include_usage === true),
          { contentType: "text/event-stream", headers: eventStreamHeaders }
        )
      }
      const run = yield* finalRun(events)
      if (run.status === "failed") {
        return yield* httpError(BadGateway, "llm_failed", run.error?.message ?? "The language model failed")
      }
      return {
        id: `chatcmpl-${run.id}`,
        object: "chat.completion" as const,
        created,
        model: agentId,
        choices: [{ index: 0, message: { role: "assistant" as const, content: run.answer }, finish_reason: "stop" }],
        usage: usageOf(run),
        citations: citationsOf(run)
      }
    })

    return handlers
      .handle("chatCompletions", ({ params, payload }) => complete(params.agent_id, payload))
      .handle("listModels", ({ params }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const agent = yield* agents.get(user.id, params.agent_id).pipe(
            Effect.mapError(() => runsFailure(new RunsFailure({ reason: { _tag: "AgentNotFound", id: params.agent_id } })))
          )
          return {
            object: "list" as const,
            data: [{
              id: agent.id,
              object: "model" as const,
              created: Math.floor(new Date(agent.created_at).getTime() / 1000),
              owned_by: "engram"
            }]
          }
        }))
  })
).pipe(Layer.provide(AuthenticationLive))
