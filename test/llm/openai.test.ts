import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted, Schedule, Stream } from "effect"
import { AiError, type LanguageModel, type Response } from "effect/ai"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { openAiCompatibleLanguageModel, type OpenAiCompatibleOptions } from "../../src/llm/openai.ts"
import { Generation } from "../../src/adapters/LlmClient.ts"
import { type ChatServer, chatServer, messageText } from "../support/chatServer.ts"

const apiKey = "sk-test-0123456789abcdef"

const modelFor = (baseUrl: string, overrides: Partial<OpenAiCompatibleOptions> = {}) =>
  openAiCompatibleLanguageModel({
    baseUrl,
    apiKey: Option.some(Redacted.make(apiKey)),
    model: "stand-in-chat",
    timeout: "5 seconds",
    maxRetries: 2,
    ...overrides
  })

const prompt = [
  { role: "system" as const, content: "You answer briefly." },
  { role: "user" as const, content: "What is the capital of France?" }
]
const expectedReply = "This is a stand-in reply to: What is the capital of France?"

const collect = (model: LanguageModel.LanguageModel) =>
  model.streamText({ prompt }).pipe(Stream.runCollect, Effect.map((parts) => Array.from(parts)))

const deltasOf = (parts: ReadonlyArray<Response.StreamPart<{}>>) =>
  parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : []))

/** A raw HTTP server for what the stand-in cannot do (never answering, echoing the key); closed with the scope. */
const rawServer = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; close: () => void }>((resolve) => {
        const server = createServer(handler)
        server.listen(0, "127.0.0.1", () =>
          resolve({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          }))
      })
    ),
    (server) => Effect.sync(server.close)
  )

/** Waits (up to 2 s) until the stand-in has seen a client leave mid-stream. */
const untilAborted = (server: ChatServer) =>
  Effect.sync(() => server.aborted).pipe(
    Effect.repeat({ until: (aborted) => aborted > 0, schedule: Schedule.spaced("20 millis"), times: 100 }),
    Effect.flatMap((aborted) => Effect.sync(() => assert.strictEqual(aborted, 1)))
  )

const assertNoKey = (error: AiError.AiError) => {
  assert.notInclude(error.message, apiKey)
  assert.notInclude(String(error), apiKey)
  assert.notInclude(JSON.stringify(error), apiKey)
}

describe("openai-compatible language model", () => {
  it.live("generateText: the reply, finish reason and usage; the messages and key reach the provider", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ apiKey })
      const model = yield* modelFor(server.url)
      const response = yield* model.generateText({ prompt })
      assert.strictEqual(response.text, expectedReply)
      assert.strictEqual(response.finishReason, "stop")
      assert.strictEqual(response.usage.inputTokens.total, 9)
      assert.strictEqual(response.usage.outputTokens.total, 12)
      assert.strictEqual(server.requests.length, 1)
      const sent = server.requests[0]!
      assert.strictEqual(sent.model, "stand-in-chat")
      assert.isUndefined(sent.stream)
      assert.deepStrictEqual(sent.messages.map((m) => ({ role: m.role, content: messageText(m) })), prompt)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("streamText: several deltas that join to the reply, then text-end and a finish with usage", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ apiKey })
      const parts = yield* collect(yield* modelFor(server.url))
      const deltas = deltasOf(parts)
      assert.isAbove(deltas.length, 3)
      assert.strictEqual(deltas.join(""), expectedReply)
      const types = parts.map((part) => part.type).filter((type) => type !== "text-delta")
      assert.deepStrictEqual(types, ["response-metadata", "text-start", "text-end", "finish"])
      const finish = parts.at(-1)
      assert.strictEqual(finish?.type, "finish")
      if (finish?.type === "finish") {
        assert.strictEqual(finish.reason, "stop")
        assert.strictEqual(finish.usage.inputTokens.total, 9)
        assert.strictEqual(finish.usage.outputTokens.total, 12)
      }
      assert.deepStrictEqual(
        { stream: server.requests[0]!.stream, stream_options: server.requests[0]!.stream_options },
        { stream: true, stream_options: { include_usage: true } }
      )
      assert.strictEqual(server.aborted, 0)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("Generation options reach the request body (generateText and streamText)", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ reply: () => "one two three four five six seven" })
      const model = yield* modelFor(server.url)
      const generation = { temperature: 0.3, maxTokens: 4, model: "other-model", stop: ["seven"] }
      const response = yield* model.generateText({ prompt }).pipe(Effect.provideService(Generation, generation))
      assert.strictEqual(response.text, "one two three four")
      assert.strictEqual(response.finishReason, "length")
      const parts = yield* collect(model).pipe(
        Effect.provideService(Generation, { temperature: 0, maxTokens: 100, stop: [" six"] })
      )
      assert.strictEqual(deltasOf(parts).join(""), "one two three four five")
      const [plain, streamed] = server.requests
      assert.deepInclude(plain, { model: "other-model", temperature: 0.3, max_tokens: 4, stop: ["seven"] })
      assert.deepInclude(streamed, { model: "stand-in-chat", temperature: 0, max_tokens: 100, stop: [" six"] })

      const viaStreamProvide = yield* model.streamText({ prompt }).pipe(
        Stream.provideService(Generation, { model: "streamed-model" }),
        Stream.runCollect
      )
      assert.isAbove(viaStreamProvide.length, 3)
      assert.strictEqual(server.requests[2]!.model, "streamed-model")
      assert.notProperty(server.requests[2]!, "temperature")
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a provider answering 503 twice is retried and succeeds, streamed or not", () =>
    Effect.gen(function*() {
      const plain = yield* chatServer({ failFirst: { status: 503, times: 2 } })
      const response = yield* (yield* modelFor(plain.url)).generateText({ prompt })
      assert.strictEqual(response.text, expectedReply)
      assert.strictEqual(plain.requests.length, 3)

      const streamed = yield* chatServer({ failFirst: { status: 429, times: 1 } })
      const parts = yield* collect(yield* modelFor(streamed.url))
      assert.strictEqual(deltasOf(parts).join(""), expectedReply)
      assert.strictEqual(streamed.requests.length, 2)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("retries stop after maxRetries with the provider's error", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ failFirst: { status: 500, times: 10 } })
      const error = yield* (yield* modelFor(server.url, { maxRetries: 1 })).generateText({ prompt }).pipe(Effect.flip)
      assert.strictEqual(server.requests.length, 2)
      assert.strictEqual(error.reason._tag, "InternalProviderError")
      assert.include(error.message, "HTTP 500")
      assert.include(error.message, "The server had an error while processing your request.")
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("400 fails at once with the status and the provider's message", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ failFirst: { status: 400, times: 5 } })
      const error = yield* (yield* modelFor(server.url)).generateText({ prompt }).pipe(Effect.flip)
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(error.reason._tag, "InvalidRequestError")
      assert.include(error.message, `HTTP 400 from the LLM provider at ${server.url}: Bad request.`)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("401 fails at once, streamed or not, naming the problem and never the key", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ apiKey: "sk-the-right-one" })
      const model = yield* modelFor(server.url)
      const plain = yield* model.generateText({ prompt }).pipe(Effect.flip)
      const streamed = yield* collect(model).pipe(Effect.flip)
      assert.strictEqual(server.requests.length, 2)
      for (const error of [plain, streamed]) {
        assert.isTrue(AiError.isAiError(error))
        assert.strictEqual(error.reason._tag, "AuthenticationError")
        assert.include(error.message, "HTTP 401")
        assert.include(error.message, "Incorrect API key provided.")
        assertNoKey(error)
      }
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a provider echoing the key in its error message has it redacted", () =>
    Effect.gen(function*() {
      const server = yield* rawServer((req, res) => {
        req.resume()
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${req.headers.authorization?.slice("Bearer ".length)}.`,
            code: "invalid_api_key"
          }
        }))
      })
      const error = yield* (yield* modelFor(server.url)).generateText({ prompt }).pipe(Effect.flip)
      assert.include(error.message, "Incorrect API key provided: [redacted].")
      assertNoKey(error)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("an unreachable provider fails with a network error", () =>
    Effect.gen(function*() {
      const server = yield* rawServer(() => {})
      server.close()
      const error = yield* (yield* modelFor(server.url, { maxRetries: 0 })).generateText({ prompt }).pipe(Effect.flip)
      assert.strictEqual(error.reason._tag, "NetworkError")
      assert.include(error.message, "could not be reached: connect ECONNREFUSED")
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a provider that never answers times out (whole call), and a stalled stream times out between chunks", () =>
    Effect.gen(function*() {
      const silent = yield* rawServer((req) => req.resume())
      const plain = yield* (yield* modelFor(silent.url, { timeout: "300 millis" })).generateText({ prompt }).pipe(
        Effect.flip
      )
      assert.include(plain.message, "sent nothing for 300ms while answering")

      const slow = yield* chatServer({ chunkDelayMs: 3000 })
      const started = Date.now()
      const streamed = yield* collect(yield* modelFor(slow.url, { timeout: "300 millis" })).pipe(Effect.flip)
      assert.include(streamed.message, "sent nothing for 300ms while streaming the answer")
      assert.isBelow(Date.now() - started, 2500)
      assert.strictEqual(slow.requests.length, 1, "a timeout is not retried")
      yield* untilAborted(slow)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a consumer that stops reading closes the provider's stream", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ chunkDelayMs: 50 })
      const parts = yield* (yield* modelFor(server.url)).streamText({ prompt }).pipe(
        Stream.filter((part) => part.type === "text-delta"),
        Stream.take(2),
        Stream.runCollect
      )
      assert.strictEqual(parts.length, 2)
      yield* untilAborted(server)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a stream that breaks off before finishing is an error, not a short answer", () =>
    Effect.gen(function*() {
      const server = yield* rawServer((req, res) => {
        req.resume()
        res.writeHead(200, { "content-type": "text/event-stream" })
        const chunk = { id: "x", choices: [{ delta: { content: "Half an" }, finish_reason: null }] }
        res.write(`data: ${JSON.stringify(chunk)}\n\n`)
        res.end()
      })
      const error = yield* collect(yield* modelFor(server.url)).pipe(Effect.flip)
      assert.strictEqual(error.reason._tag, "InvalidResponseError")
      assert.include(error.message, "the stream ended before the answer was finished")
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a text-only provider refuses file parts clearly", () =>
    Effect.gen(function*() {
      const server = yield* chatServer()
      const error = yield* (yield* modelFor(server.url)).generateText({
        prompt: [{ role: "user", content: [{ type: "file", mediaType: "image/png", data: new Uint8Array([1]) }] }]
      }).pipe(Effect.flip)
      assert.strictEqual(error.reason._tag, "InvalidUserInputError")
      assert.strictEqual(server.requests.length, 0)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
