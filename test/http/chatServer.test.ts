import OpenAI, { APIError, AuthenticationError } from "openai"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import { describe, expect, it, vi } from "vitest"
import { type ChatServer, type ChatServerOptions, startChatServer } from "../support/chatServer.ts"

/** Runs `body` against a fresh stand-in and closes it afterwards. */
const withChatServer = async (options: ChatServerOptions, body: (server: ChatServer) => Promise<void>) => {
  const server = await startChatServer(options)
  try {
    await body(server)
  } finally {
    await server.close()
  }
}

const client = (server: ChatServer, extra: { apiKey?: string; maxRetries?: number } = {}) =>
  new OpenAI({ baseURL: server.url, apiKey: extra.apiKey ?? "sk-test", maxRetries: extra.maxRetries ?? 0 })

interface ErrorBody {
  readonly error: { readonly message: string; readonly type: string; readonly param: string | null; readonly code: string | null }
}
const errorBody = async (response: Response) => (await response.json()) as ErrorBody

const messages = [
  { role: "system" as const, content: "You answer briefly." },
  { role: "user" as const, content: "What is the capital of France?" }
]
const expectedReply = "This is a stand-in reply to: What is the capital of France?"
// Word counts: 3 (system) + 6 (user) prompt, 12 completion.
const expectedUsage = { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 }

describe("chat completions stand-in (OpenAI wire protocol)", () => {
  it("answers a non-streaming request like OpenAI does, and records the request", () =>
    withChatServer({ apiKey: "sk-test" }, async (server) => {
      const completion = await client(server).chat.completions.create({
        model: "gpt-test",
        messages,
        temperature: 0.2,
        max_tokens: 100
      })
      expect(completion.object).toBe("chat.completion")
      expect(completion.id).toMatch(/^chatcmpl-/)
      expect(completion.model).toBe("gpt-test")
      expect(completion.choices).toHaveLength(1)
      expect(completion.choices[0]!.message).toMatchObject({ role: "assistant", content: expectedReply })
      expect(completion.choices[0]!.finish_reason).toBe("stop")
      expect(completion.usage).toEqual(expectedUsage)
      expect(server.requests).toEqual([{ model: "gpt-test", messages, temperature: 0.2, max_tokens: 100 }])
    }))

  it("streams role, several content deltas, finish and usage chunks, then [DONE]", () =>
    withChatServer({}, async (server) => {
      const stream = await client(server).chat.completions.create({
        model: "gpt-test",
        messages,
        stream: true,
        stream_options: { include_usage: true }
      })
      const chunks: Array<ChatCompletionChunk> = []
      for await (const chunk of stream) chunks.push(chunk)

      expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
      expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === "gpt-test")).toBe(true)
      const [first, ...rest] = chunks
      expect(first!.choices).toEqual([
        { index: 0, delta: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: null }
      ])
      const usageChunk = rest.pop()!
      const finishChunk = rest.pop()!
      const contentChunks = rest
      expect(contentChunks.length).toBeGreaterThan(3)
      expect(contentChunks.every((c) => c.choices[0]!.finish_reason === null && c.usage === null)).toBe(true)
      expect(contentChunks.map((c) => c.choices[0]!.delta.content).join("")).toBe(expectedReply)
      expect(finishChunk.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }])
      expect(usageChunk.choices).toEqual([])
      expect(usageChunk.usage).toEqual(expectedUsage)
      expect(server.requests[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } })
      expect(server.aborted).toBe(0)
    }))

  it("frames events as `data: <json>\\n\\n`, splits one event across writes, and ends with [DONE]", () =>
    withChatServer({ reply: () => "Bonjour, ça va très bien, merci beaucoup !" }, async (server) => {
      const response = await fetch(`${server.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Salut" }], stream: true })
      })
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      const reads: Array<string> = []
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        reads.push(decoder.decode(read.value, { stream: true }))
      }
      const text = reads.join("")
      expect(reads.some((piece) => !piece.endsWith("\n\n")), "some read ends inside an event").toBe(true)
      expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
      const events = text.split("\n\n").slice(0, -1)
      expect(events.every((event) => event.startsWith("data: ") && !event.includes("\n"))).toBe(true)
      const payloads = events.slice(0, -1).map((event) => JSON.parse(event.slice("data: ".length)))
      expect(payloads.every((p) => !("usage" in p)), "no usage without include_usage").toBe(true)
      expect(payloads.map((p) => p.choices[0].delta.content ?? "").join("")).toBe(
        "Bonjour, ça va très bien, merci beaucoup !"
      )
      expect(payloads.at(-1).choices[0].finish_reason).toBe("stop")
    }))

  it("truncates to max_tokens words with finish_reason length, streaming or not", () =>
    withChatServer({ reply: () => "one two three four five six" }, async (server) => {
      const openai = client(server)
      const completion = await openai.chat.completions.create({ model: "m", messages, max_tokens: 3 })
      expect(completion.choices[0]!.message.content).toBe("one two three")
      expect(completion.choices[0]!.finish_reason).toBe("length")
      expect(completion.usage!.completion_tokens).toBe(3)

      const stream = await openai.chat.completions.create({ model: "m", messages, max_tokens: 3, stream: true })
      let content = ""
      let finishReason: string | null = null
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? ""
        finishReason = chunk.choices[0]?.finish_reason ?? finishReason
      }
      expect(content).toBe("one two three")
      expect(finishReason).toBe("length")
    }))

  it("passes the request to a custom reply function and honours stop sequences", () =>
    withChatServer({ reply: (request) => `model=${request.model} temperature=${request.temperature}. END more` }, async (server) => {
      const completion = await client(server).chat.completions.create({
        model: "custom",
        messages,
        temperature: 0.7,
        stop: ["END"]
      })
      expect(completion.choices[0]!.message.content).toBe("model=custom temperature=0.7. ")
      expect(completion.choices[0]!.finish_reason).toBe("stop")
    }))

  it("fails the first requests with the configured status as an APIError, then succeeds", () =>
    withChatServer({ failFirst: { status: 503, times: 1 } }, async (server) => {
      const openai = client(server, { maxRetries: 0 })
      const failure = await openai.chat.completions.create({ model: "m", messages }).then(
        () => undefined,
        (error: unknown) => error
      )
      expect(failure).toBeInstanceOf(APIError)
      expect((failure as APIError).status).toBe(503)
      expect((failure as APIError).type).toBe("server_error")
      const completion = await openai.chat.completions.create({ model: "m", messages })
      expect(completion.choices[0]!.message.content).toBe(expectedReply)
      expect(server.requests).toHaveLength(2)
    }))

  it("a client with retries gets through a transient 503", () =>
    withChatServer({ failFirst: { status: 503, times: 1 } }, async (server) => {
      const completion = await client(server, { maxRetries: 1 }).chat.completions.create({ model: "m", messages })
      expect(completion.choices[0]!.message.content).toBe(expectedReply)
      expect(server.requests).toHaveLength(2)
    }))

  it("rejects a wrong API key with 401 in OpenAI's error shape", () =>
    withChatServer({ apiKey: "sk-right" }, async (server) => {
      const failure = await client(server, { apiKey: "sk-wrong" }).chat.completions.create({ model: "m", messages }).then(
        () => undefined,
        (error: unknown) => error
      )
      expect(failure).toBeInstanceOf(AuthenticationError)
      expect((failure as APIError).status).toBe(401)
      expect((failure as APIError).code).toBe("invalid_api_key")
      const missing = await fetch(`${server.url}/models`)
      expect(missing.status).toBe(401)
      expect((await errorBody(missing)).error).toMatchObject({ type: "invalid_request_error", code: null })
      const models = await client(server, { apiKey: "sk-right" }).models.list()
      expect(models.data.map((m) => m.id)).toEqual(["stand-in-chat"])
    }))

  it("answers invalid JSON with 400 and unknown paths with 404, both in OpenAI's error shape", () =>
    withChatServer({}, async (server) => {
      const bad = await fetch(`${server.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{not json"
      })
      expect(bad.status).toBe(400)
      const badBody = await errorBody(bad)
      expect(badBody.error).toMatchObject({ type: "invalid_request_error", code: null })
      expect(badBody.error.message).toMatch(/could not parse the JSON body/)
      const missing = await fetch(`${server.url}/completions`, { method: "POST", body: "{}" })
      expect(missing.status).toBe(404)
      expect(await errorBody(missing)).toEqual({
        error: { message: "Invalid URL (POST /v1/completions)", type: "invalid_request_error", param: null, code: null }
      })
      const noModel = await fetch(`${server.url}/chat/completions`, { method: "POST", body: JSON.stringify({ messages }) })
      expect(noModel.status).toBe(400)
      expect((await errorBody(noModel)).error.param).toBe("model")
      expect(server.requests).toEqual([{ messages }])
    }))

  it("notices a client that disconnects mid-stream and stops writing", () =>
    withChatServer({ chunkDelayMs: 20, reply: () => "word ".repeat(200) }, async (server) => {
      const stream = await client(server).chat.completions.create({ model: "m", messages, stream: true })
      let received = 0
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) received++
        if (received === 3) break // breaking out of the iteration aborts the request
      }
      await vi.waitFor(() => expect(server.aborted).toBe(1))
    }))
})
