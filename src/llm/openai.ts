import { Duration, Effect, Option, Redacted, Schedule, Schema, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response } from "effect/ai"
import { Sse } from "effect/encoding"
import { HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { modelAnswerAttributes, modelCallSpan, modelErrorAttributes } from "../observability/GenAi.ts"
import { Generation, type GenerationOptions } from "./generation.ts"

export interface OpenAiCompatibleOptions {
  /** The API root including its version, e.g. http://localhost:11434/v1. */
  readonly baseUrl: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly model: string
  /** Limit for a whole non-streamed call, and for each wait on a stream (first byte, then between chunks). */
  readonly timeout: Duration.Input
  /** Further attempts after a transient failure (connection error, 408, 409, 429, 5xx) before any output. */
  readonly maxRetries: number
}

const errorModule = "OpenAiCompatible"
const retryBaseDelay = "500 millis"

const Text = Schema.optional(Schema.NullOr(Schema.String))
const Count = Schema.optional(Schema.NullOr(Schema.Number))

const ErrorDetail = Schema.Struct({
  message: Text,
  type: Text,
  code: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number])))
})

/** OpenAI's {"error":{"message"}}, and the shapes other servers use: {"error":"…"}, {"message":"…"}, {"detail":"…"}. */
const ErrorBody = Schema.Struct({
  error: Schema.optional(Schema.Union([ErrorDetail, Schema.String])),
  message: Schema.optional(Schema.Unknown),
  detail: Schema.optional(Schema.Unknown)
})

const UsageBody = Schema.Struct({
  prompt_tokens: Count,
  completion_tokens: Count,
  prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: Count }))),
  completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: Count })))
})
type UsageBody = typeof UsageBody.Type

/** `reasoning_content` (vLLM, DeepSeek, llama.cpp) and `reasoning` (Ollama) carry a thinking model's reasoning. */
const MessageBody = Schema.Struct({ content: Text, refusal: Text, reasoning_content: Text, reasoning: Text })

const ChatCompletion = Schema.Struct({
  id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  choices: Schema.Array(Schema.Struct({ message: MessageBody, finish_reason: Text })),
  usage: Schema.optional(Schema.NullOr(UsageBody))
})

const ChatCompletionChunk = Schema.Struct({
  id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  choices: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    delta: Schema.optional(Schema.NullOr(MessageBody)),
    finish_reason: Text
  })))),
  usage: Schema.optional(Schema.NullOr(UsageBody)),
  error: Schema.optional(Schema.Union([ErrorDetail, Schema.String]))
})

const decodeCompletion = Schema.decodeUnknownEffect(Schema.fromJsonString(ChatCompletion))
const decodeChunk = Schema.decodeUnknownEffect(Schema.fromJsonString(ChatCompletionChunk))
const decodeErrorBody = Schema.decodeUnknownOption(Schema.fromJsonString(ErrorBody))

const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case "stop":
    case "length":
      return reason
    case "content_filter":
      return "content-filter"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case null:
    case undefined:
      return "unknown"
    default:
      return "other"
  }
}

const usageOf = (usage: UsageBody | null | undefined): Response.FinishPartEncoded["usage"] => {
  const input = usage?.prompt_tokens ?? undefined
  const output = usage?.completion_tokens ?? undefined
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? undefined
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens ?? undefined
  return {
    inputTokens: {
      total: input,
      cacheRead: cached,
      uncached: input !== undefined && cached !== undefined ? input - cached : undefined
    },
    outputTokens: {
      total: output,
      reasoning,
      text: output !== undefined && reasoning !== undefined ? output - reasoning : undefined
    }
  }
}

/** A failed attempt; only `transient` ones are retried. */
interface Failure {
  readonly error: AiError.AiError
  readonly transient: boolean
}

const textOf = (parts: ReadonlyArray<Prompt.UserMessagePart | Prompt.AssistantMessagePart>, role: string) =>
  Effect.forEach(parts, (part) => {
    switch (part.type) {
      case "text":
        return Effect.succeed(part.text)
      case "reasoning":
        return Effect.succeed("")
      default:
        return Effect.fail(`${role} message with a ${part.type} part`)
    }
  }).pipe(Effect.map((texts) => texts.join("")))

/** Prompt messages as Chat Completions messages: text only (files and tool calls are not sent). */
const chatMessages = (prompt: Prompt.Prompt) =>
  Effect.forEach(prompt.content, (message) => {
    switch (message.role) {
      case "system":
        return Effect.succeed({ role: "system", content: message.content })
      case "user":
      case "assistant":
        return Effect.map(textOf(message.content, message.role), (content) => ({ role: message.role, content }))
      case "tool":
        return Effect.fail("tool message")
    }
  })

/** Any OpenAI-compatible POST /chat/completions (OpenAI, Ollama, vLLM, llama.cpp server) as a LanguageModel. */
export const openAiCompatibleLanguageModel = (
  options: OpenAiCompatibleOptions
): Effect.Effect<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`
    const secret = Option.map(options.apiKey, Redacted.value)
    const timeout = Duration.fromInputUnsafe(options.timeout)
    const where = `the LLM provider at ${options.baseUrl}`

    /** Providers sometimes echo the key they were sent; it never reaches an error message. */
    const scrub = (text: string) =>
      Option.match(secret, {
        onNone: () => text,
        onSome: (key) => (key === "" ? text : text.replaceAll(key, "[redacted]"))
      })

    const aiError = (method: string, reason: AiError.AiErrorReason) =>
      AiError.make({ module: errorModule, method, reason })

    const statusFailure = (method: string, response: HttpClientResponse.HttpClientResponse) =>
      response.text.pipe(
        Effect.orElseSucceed(() => ""),
        Effect.map((raw): Failure => {
          const status = response.status
          const body = scrub(raw)
          const parsed = Option.getOrUndefined(decodeErrorBody(body))
          const detail = parsed?.error
          const providerMessage = typeof detail === "string"
            ? detail
            : detail?.message ??
              (typeof parsed?.message === "string" ? parsed.message : undefined) ??
              (typeof parsed?.detail === "string" ? parsed.detail : undefined)
          const code = typeof detail === "object" ? detail.code ?? undefined : undefined
          const description = `HTTP ${status} from ${where}: ` +
            (providerMessage ?? (body.trim() === "" ? "no error message" : body.trim().slice(0, 300)))
          const http = { body: body.slice(0, 2000) }
          const retryAfterSeconds = Number(response.headers["retry-after"])
          const reason: AiError.AiErrorReason = status === 401
            ? new AiError.AuthenticationError({
              kind: Option.isNone(secret) ? "MissingKey" : "InvalidKey",
              description: `${description} (ENGRAM_LLM_API_KEY)`,
              http
            })
            : status === 403
            ? new AiError.AuthenticationError({ kind: "InsufficientPermissions", description, http })
            : status === 429 && code === "insufficient_quota"
            ? new AiError.QuotaExhaustedError({ http, metadata: { providerMessage: description } })
            : status === 429
            ? new AiError.RateLimitError({
              http,
              metadata: { providerMessage: description },
              retryAfter: Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0
                ? Duration.seconds(retryAfterSeconds)
                : undefined
            })
            : status === 408 || status === 409 || status >= 500
            ? new AiError.InternalProviderError({ description, http })
            : status >= 400 && status < 500
            ? new AiError.InvalidRequestError({ description, http })
            : new AiError.UnknownError({ description, http })
          const transient = status === 408 || status === 409 || status >= 500 ||
            (status === 429 && reason._tag === "RateLimitError")
          return { error: aiError(method, reason), transient }
        })
      )

    /** The innermost cause says what happened (connect ECONNREFUSED …), where fetch only says it failed. */
    const rootMessage = (error: HttpClientError.HttpClientError) => {
      let cause: unknown = error.reason.cause
      let message = error.reason.description ?? error.message
      while (cause instanceof Error) {
        message = cause.message
        cause = cause.cause
      }
      return scrub(message)
    }

    const requestFailure = (method: string, error: HttpClientError.HttpClientError, during: string): Failure => ({
      error: aiError(
        method,
        new AiError.NetworkError({
          reason: error.reason._tag === "EncodeError" || error.reason._tag === "InvalidUrlError"
            ? error.reason._tag
            : "TransportError",
          method: "POST",
          url,
          description: `${where} ${during}: ${rootMessage(error)}`
        })
      ),
      transient: error.reason._tag === "TransportError"
    })

    const timedOut = (method: string, waitingFor: string): Failure => ({
      error: aiError(
        method,
        new AiError.NetworkError({
          reason: "TransportError",
          method: "POST",
          url,
          description: `${where} sent nothing for ${Duration.format(timeout)} while ${waitingFor} ` +
            "(ENGRAM_LLM_TIMEOUT_SECONDS)"
        })
      ),
      transient: false
    })

    const invalidResponse = (method: string, description: string) =>
      aiError(method, new AiError.InvalidResponseError({ description: `${where}: ${description}` }))

    const modelOf = (generation: GenerationOptions) => generation.model ?? options.model

    /** The GenAI span of one chat call (retries included), named `chat {model}`. */
    const chatSpan = (generation: GenerationOptions, stream: boolean) =>
      modelCallSpan({
        operation: "chat",
        provider: "openai",
        model: modelOf(generation),
        url,
        temperature: generation.temperature,
        maxTokens: generation.maxTokens,
        stream
      })

    const annotateFailure = (error: AiError.AiError) =>
      Effect.annotateCurrentSpan(modelErrorAttributes(error.reason._tag))

    const requestBody = Effect.fnUntraced(function*(
      method: string,
      provider: LanguageModel.ProviderOptions,
      generation: GenerationOptions,
      stream: boolean
    ) {
      if (provider.tools.length > 0) {
        return yield* aiError(
          method,
          new AiError.InvalidUserInputError({
            description: "tool calling is not supported by the openai-compatible provider"
          })
        )
      }
      const messages = yield* chatMessages(provider.prompt).pipe(
        Effect.mapError((what) =>
          aiError(method, new AiError.InvalidUserInputError({ description: `cannot send a ${what}: text only` }))
        )
      )
      return {
        model: modelOf(generation),
        messages,
        ...(generation.temperature === undefined ? {} : { temperature: generation.temperature }),
        ...(generation.maxTokens === undefined ? {} : { max_tokens: generation.maxTokens }),
        ...(generation.stop === undefined || generation.stop.length === 0 ? {} : { stop: [...generation.stop] }),
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
      }
    })

    /** One POST answered 2xx; other statuses and connection errors fail with what the provider said. */
    const post = (method: string, body: unknown) =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.bodyJsonUnsafe(body),
        (request) => Option.match(options.apiKey, {
          onNone: () => request,
          onSome: (key) => HttpClientRequest.bearerToken(request, key)
        }),
        client.execute,
        Effect.mapError((error) => requestFailure(method, error, "could not be reached")),
        Effect.flatMap((response) =>
          response.status >= 200 && response.status < 300
            ? Effect.succeed(response)
            : Effect.flatMap(statusFailure(method, response), Effect.fail)
        )
      )

    const withRetries = <A, R>(attempt: Effect.Effect<A, Failure, R>) =>
      attempt.pipe(
        Effect.retry({
          while: (failure) => failure.transient,
          times: options.maxRetries,
          schedule: Schedule.exponential(retryBaseDelay).pipe(Schedule.jittered)
        }),
        Effect.mapError((failure) => failure.error)
      )

    const generateText = (provider: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const generation = yield* Generation
        return yield* answer(provider, generation).pipe(
          Effect.tapError(annotateFailure),
          Effect.withSpan(...chatSpan(generation, false))
        )
      })

    const answer = Effect.fnUntraced(function*(provider: LanguageModel.ProviderOptions, generation: GenerationOptions) {
      const method = "generateText"
      const body = yield* requestBody(method, provider, generation, false)
      const completion = yield* withRetries(
        post(method, body).pipe(
          Effect.flatMap((response) =>
            Effect.mapError(response.text, (error) => requestFailure(method, error, "broke off the answer"))
          ),
          Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.fail(timedOut(method, "answering"))
          })
        )
      )
      const decoded = yield* decodeCompletion(completion).pipe(
        Effect.mapError((error) => invalidResponse(method, `the answer is not a chat completion: ${error.message}`))
      )
      const choice = decoded.choices[0]
      if (choice === undefined) return yield* invalidResponse(method, "the answer has no choices")
      yield* Effect.annotateCurrentSpan(modelAnswerAttributes({
        id: decoded.id,
        model: decoded.model,
        finishReasons: decoded.choices.flatMap((one) => one.finish_reason ? [one.finish_reason] : []),
        inputTokens: decoded.usage?.prompt_tokens,
        outputTokens: decoded.usage?.completion_tokens
      }))
      const reasoning = choice.message.reasoning_content ?? choice.message.reasoning
      const parts: Array<Response.PartEncoded> = [
        { type: "response-metadata", id: decoded.id, modelId: decoded.model },
        ...(reasoning ? [{ type: "reasoning" as const, text: reasoning }] : []),
        { type: "text", text: choice.message.content ?? choice.message.refusal ?? "" },
        { type: "finish", reason: finishReason(choice.finish_reason), usage: usageOf(decoded.usage) }
      ]
      return parts
    })

    const streamText = (provider: LanguageModel.ProviderOptions) =>
      Stream.unwrap(Effect.gen(function*() {
        const generation = yield* Generation
        return streamAnswer(provider, generation).pipe(
          Stream.tapError(annotateFailure),
          Stream.withSpan(...chatSpan(generation, true))
        )
      }))

    const streamAnswer = (provider: LanguageModel.ProviderOptions, generation: GenerationOptions) =>
      Stream.unwrap(Effect.gen(function*() {
        const method = "streamText"
        const body = yield* requestBody(method, provider, generation, true)
        const response = yield* withRetries(
          post(method, body).pipe(Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.fail(timedOut(method, "waiting for the answer to start"))
          }))
        )
        const state = {
          started: false,
          text: false,
          reasoning: false,
          done: false,
          id: undefined as string | undefined,
          model: undefined as string | undefined,
          /** The provider's own finish_reason ("stop", "length", "tool_calls"…). */
          finish: undefined as string | undefined,
          usage: undefined as UsageBody | null | undefined
        }
        const textId = "text-0"
        const reasoningId = "reasoning-0"

        const partsOf = (data: string): Effect.Effect<Array<Response.StreamPartEncoded>, AiError.AiError> => {
          if (data.trim() === "[DONE]") {
            state.done = true
            return Effect.succeed([])
          }
          return decodeChunk(data).pipe(
            Effect.mapError((error) => invalidResponse(method, `a stream event is not a chunk: ${error.message}`)),
            Effect.flatMap((chunk) => {
              if (chunk.error !== undefined) {
                const message = typeof chunk.error === "string" ? chunk.error : chunk.error.message ?? "no message"
                return Effect.fail(aiError(
                  method,
                  new AiError.InternalProviderError({ description: `${where} failed mid-answer: ${scrub(message)}` })
                ))
              }
              const parts: Array<Response.StreamPartEncoded> = []
              if (!state.started) {
                state.started = true
                state.id = chunk.id
                state.model = chunk.model
                parts.push({ type: "response-metadata", id: chunk.id, modelId: chunk.model })
              }
              const choice = chunk.choices?.[0]
              const reasoning = choice?.delta?.reasoning_content ?? choice?.delta?.reasoning
              if (reasoning) {
                if (!state.reasoning) parts.push({ type: "reasoning-start", id: reasoningId })
                state.reasoning = true
                parts.push({ type: "reasoning-delta", id: reasoningId, delta: reasoning })
              }
              const content = choice?.delta?.content
              if (content) {
                if (state.reasoning) parts.push({ type: "reasoning-end", id: reasoningId })
                state.reasoning = false
                if (!state.text) parts.push({ type: "text-start", id: textId })
                state.text = true
                parts.push({ type: "text-delta", id: textId, delta: content })
              }
              if (choice?.finish_reason) state.finish = choice.finish_reason
              if (chunk.usage) state.usage = chunk.usage
              return Effect.succeed(parts)
            })
          )
        }

        const closing = Effect.suspend((): Effect.Effect<Array<Response.StreamPartEncoded>, AiError.AiError> =>
          !state.done && state.finish === undefined
            ? Effect.fail(invalidResponse(method, "the stream ended before the answer was finished"))
            : Effect.annotateCurrentSpan(modelAnswerAttributes({
              id: state.id,
              model: state.model,
              finishReasons: state.finish === undefined ? [] : [state.finish],
              // Usage comes in the last chunk, as stream_options.include_usage asks.
              inputTokens: state.usage?.prompt_tokens,
              outputTokens: state.usage?.completion_tokens
            })).pipe(Effect.as([
              ...(state.reasoning ? [{ type: "reasoning-end" as const, id: reasoningId }] : []),
              ...(state.text ? [{ type: "text-end" as const, id: textId }] : []),
              { type: "finish" as const, reason: finishReason(state.finish), usage: usageOf(state.usage) }
            ]))
        )

        return response.stream.pipe(
          Stream.mapError((error) => requestFailure(method, error, "broke off the answer").error),
          Stream.timeoutOrElse({
            duration: timeout,
            orElse: () => Stream.fail(timedOut(method, "streaming the answer").error)
          }),
          Stream.decodeText,
          Stream.pipeThroughChannel(Sse.decode()),
          Stream.mapError((error) =>
            AiError.isAiError(error)
              ? error
              : invalidResponse(
                method,
                `unreadable event stream: ${Sse.Retry.is(error) ? "reconnection requested" : error.message}`
              )
          ),
          Stream.mapEffect((event) => partsOf(event.data)),
          Stream.takeUntil(() => state.done),
          Stream.concat(Stream.fromEffect(closing)),
          Stream.flattenIterable
        )
      }))

    return yield* LanguageModel.make({ generateText, streamText })
  })
