import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import OpenAI from "openai"
import { afterAll } from "vitest"
import { startChatServer } from "../support/chatServer.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import {
  engines,
  freshServer,
  freshSettings,
  serverLayer,
  TestServer,
  withServer
} from "../support/server.ts"

const corpus = {
  ducks: "Mallards are dabbling ducks. They feed at the water surface in shallow ponds.",
  volcano: "Basaltic lava flows from shield volcanoes on the islands of Hawaii.",
  finance: "The central bank raised interest rates again to curb inflation.",
  bread: "Knead the dough and let it rise before baking the bread."
}

/** A user, one source holding the corpus (ready), and an agent bound to it. */
const seeded = (name: string, agentFields: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const token = yield* login(url, name)
    const sourceId = yield* createSource(url, token)
    const documents: Record<string, string> = {}
    for (const [title, text] of Object.entries(corpus)) {
      const accepted = yield* ingestText(url, token, sourceId, title, text)
      yield* waitForDocument(url, token, sourceId, accepted.body.id)
      documents[title] = accepted.body.id
    }
    const agent = yield* request(url, "/api/v1/agents", {
      token,
      json: { name: "Naturalist", instructions: "Answer briefly.", source_ids: [sourceId], ...agentFields }
    })
    assert.strictEqual(agent.status, 201, agent.text)
    return { url, token, sourceId, documents, agentId: agent.body.id as string }
  })

/** Real time passes (it.effect's clock is a test clock). */
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

interface SseEvent {
  readonly event: string
  readonly data: any
}

/** Reads a text/event-stream response to its end (or until `stopAfter` says so) as events. */
const readEvents = async (response: Response, stopAfter?: (event: SseEvent) => boolean) => {
  const events: Array<SseEvent> = []
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let boundary: number
    while ((boundary = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, boundary)
      buffer = buffer.slice(boundary + 2)
      const event = block.match(/^event: (.*)$/m)?.[1] ?? "message"
      const data = block.match(/^data: (.*)$/m)?.[1] ?? ""
      const parsed = { event, data: data === "[DONE]" ? data : JSON.parse(data) }
      events.push(parsed)
      if (stopAfter?.(parsed) === true) {
        await reader.cancel()
        return events
      }
    }
  }
  return events
}

const askStream = (url: string, token: string, agentId: string, question: string, signal?: AbortSignal) =>
  fetch(`${url}/api/v1/agents/${agentId}/ask`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ question, stream: true }),
    signal
  })

for (const engine of engines) {
  layer(freshServer(engine))(`answers with the extractive provider (${engine})`, (it) => {
    it.effect("ask answers from the bound sources with the fact and a citation of the right chunk", () =>
      Effect.gen(function*() {
        const { url, token, agentId, documents, sourceId } = yield* seeded("Asker")
        const reply = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "Where do mallards feed?" }
        })
        assert.strictEqual(reply.status, 200, reply.text)
        const run = reply.body
        assert.strictEqual(run.status, "completed")
        assert.strictEqual(run.provider, "extractive")
        assert.isNull(run.model)
        assert.include(run.answer, "They feed at the water surface in shallow ponds")
        assert.match(run.answer, /\[1\]/)
        assert.strictEqual(run.citations[0].n, 1)
        assert.strictEqual(run.citations[0].document_id, documents.ducks)
        assert.strictEqual(run.citations[0].source_id, sourceId)
        assert.strictEqual(run.citations[0].title, "ducks")
        assert.include(run.citations[0].quote, "Mallards")
        assert.strictEqual(run.retrieval.strategy, "multi")
        assert.deepStrictEqual(run.retrieval.searched_source_ids, [sourceId])
        assert.isAtLeast(run.retrieval.passages, 1)
        assert.isNotNull(run.finished_at)
        const again = yield* request(url, `/api/v1/agents/${agentId}/runs/${run.id}`, { token })
        assert.deepStrictEqual(again.body, run)

        const unknown = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "What is the airspeed of a swallow carrying a coconut?" }
        })
        assert.strictEqual(unknown.body.status, "completed")
        assert.match(unknown.body.answer, /do not contain/i)
        assert.deepStrictEqual(unknown.body.citations, [])
      }))

    it.effect("an agent without bindings says it has no sources; an agent never cites unbound sources", () =>
      Effect.gen(function*() {
        const { url, token, sourceId } = yield* seeded("Binder")
        const lonely = yield* request(url, "/api/v1/agents", { token, json: { name: "Lonely" } })
        const empty = yield* request(url, `/api/v1/agents/${lonely.body.id}/ask`, {
          token,
          json: { question: "Where do mallards feed?" }
        })
        assert.strictEqual(empty.status, 200)
        assert.strictEqual(empty.body.status, "completed")
        assert.match(empty.body.answer, /no sources/)
        assert.deepStrictEqual(empty.body.citations, [])
        assert.isNull(empty.body.retrieval)

        // A second source with the answer, not bound to the agent.
        const other = yield* createSource(url, token, "Other")
        const doc = yield* ingestText(url, token, other, "herons", "Herons hunt fish while wading in shallow water.")
        yield* waitForDocument(url, token, other, doc.body.id)
        const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Bound", source_ids: [sourceId] } })
        const run = yield* request(url, `/api/v1/agents/${agent.body.id}/ask`, {
          token,
          json: { question: "What do herons hunt while wading?" }
        })
        assert.strictEqual(run.body.status, "completed")
        assert.isTrue(run.body.citations.every((c: { source_id: string }) => c.source_id === sourceId))
        assert.notInclude(run.body.answer, "Herons")
      }))

    it.effect("conversations keep the question and the answer with its citations; ownership on every route", () =>
      Effect.gen(function*() {
        const { url, token, agentId, documents } = yield* seeded("Talker")
        const conversation = yield* request(url, `/api/v1/agents/${agentId}/conversations`, { token, json: {} })
        assert.strictEqual(conversation.status, 201, conversation.text)
        const path = `/api/v1/agents/${agentId}/conversations/${conversation.body.id}/messages`
        const posted = yield* request(url, path, { token, json: { content: "What is raised to curb inflation?" } })
        assert.strictEqual(posted.status, 200, posted.text)
        assert.strictEqual(posted.body.conversation_id, conversation.body.id)
        assert.strictEqual(posted.body.citations[0].document_id, documents.finance)
        const messages = yield* request(url, path, { token })
        const items = messages.body.items
        assert.deepStrictEqual(items.map((m: { role: string }) => m.role), ["user", "assistant"])
        assert.strictEqual(items[0].content, "What is raised to curb inflation?")
        assert.strictEqual(items[1].content, posted.body.answer)
        assert.strictEqual(items[1].run_id, posted.body.id)
        assert.deepStrictEqual(items[1].citations, posted.body.citations)

        const intruder = yield* login(url, "Intruder")
        const routes: ReadonlyArray<readonly [string, unknown]> = [
          [`/api/v1/agents/${agentId}/ask`, { question: "Where do mallards feed?" }],
          [path, { content: "hello" }],
          [`/api/v1/agents/${agentId}/runs/${posted.body.id}/cancel`, undefined],
          [`/api/v1/agents/${agentId}/runs/${posted.body.id}`, undefined]
        ]
        for (const [route, json] of routes) {
          const reply = yield* request(url, route, {
            token: intruder,
            ...(json === undefined ? { method: route.endsWith("cancel") ? "POST" : "GET" } : { json })
          })
          assert.strictEqual(reply.status, 404, route)
        }
        const wrongConversation = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "x", conversation_id: "nope" }
        })
        assert.strictEqual(wrongConversation.status, 404)
        assert.strictEqual(wrongConversation.body.error.code, "conversation_not_found")
        const finished = yield* request(url, `/api/v1/agents/${agentId}/runs/${posted.body.id}/cancel`, {
          token,
          method: "POST"
        })
        assert.strictEqual(finished.status, 409)
        assert.strictEqual(finished.body.error.code, "run_finished")
        const bounds = yield* request(url, `/api/v1/agents/${agentId}/ask`, { token, json: { question: "" } })
        assert.strictEqual(bounds.status, 422)
        const extra = yield* request(url, `/api/v1/agents/${agentId}/ask`, { token, json: { question: "x", k: 1 } })
        assert.strictEqual(extra.status, 422)
      }))

    it.effect("stream: run.started, retrieval, deltas that join to the answer, citations, done", () =>
      Effect.gen(function*() {
        const { url, token, agentId, documents } = yield* seeded("Streamer")
        const events = yield* Effect.promise(async () => {
          const response = await askStream(url, token, agentId, "Where do mallards feed?")
          assert.strictEqual(response.status, 200)
          assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/)
          return readEvents(response)
        })
        const names = events.map((e) => e.event)
        assert.strictEqual(names[0], "run.started")
        assert.strictEqual(names[1], "retrieval")
        assert.deepStrictEqual(names.slice(-2), ["citations", "done"])
        const deltas = events.filter((e) => e.event === "delta").map((e) => e.data.text as string)
        assert.isAtLeast(deltas.length, 2)
        const done = events[events.length - 1]!.data
        assert.strictEqual(done.status, "completed")
        assert.strictEqual(deltas.join(""), done.answer)
        assert.strictEqual(events[0]!.data.status, "running")
        assert.strictEqual(done.citations[0].document_id, documents.ducks)
      }))
  })
}

// A stand-in for a remote language model (the real Chat Completions protocol over HTTP with SSE).
let slowReply = false
const longReply = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ")
const chat = await startChatServer({
  reply: (body) => {
    const last = body.messages[body.messages.length - 1]
    const question = typeof last?.content === "string" ? last.content : ""
    return slowReply ? longReply : `Mallards feed at the water surface [1]. You asked: ${question}`
  },
  chunkDelayMs: 40
})
afterAll(() => chat.close())

layer(freshServer("pglite", { llmBaseUrl: Option.some(chat.url), llmModel: "stand-in-chat", llmMaxRetries: 0 }))(
  "answers with an OpenAI-compatible language model",
  (it) => {
    it.effect("the model's answer, with the passages and history in its prompt, and citations mapped", () =>
      Effect.gen(function*() {
        slowReply = false
        const { url, token, agentId, documents } = yield* seeded("Modeller", {
          model_settings: { temperature: 0.2, max_tokens: 200 }
        })
        const before = chat.requests.length
        const reply = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "Where do mallards feed?" }
        })
        assert.strictEqual(reply.status, 200, reply.text)
        const run = reply.body
        assert.strictEqual(run.provider, "openai-compatible")
        assert.strictEqual(run.model, "stand-in-chat")
        assert.strictEqual(run.answer, "Mallards feed at the water surface [1]. You asked: Where do mallards feed?")
        assert.strictEqual(run.citations.length, 1)
        assert.strictEqual(run.citations[0].document_id, documents.ducks)
        assert.isAbove(run.usage.output_tokens, 0)
        const sent = chat.requests.slice(before)
        assert.strictEqual(sent.length, 1)
        const body = sent[0]!
        assert.strictEqual(body.temperature, 0.2)
        assert.strictEqual(body.max_tokens, 200)
        const system = body.messages[0]!
        assert.strictEqual(system.role, "system")
        assert.include(String(system.content), "Answer briefly.")
        assert.include(String(system.content), corpus.ducks)
        assert.deepStrictEqual(body.messages[body.messages.length - 1], { role: "user", content: "Where do mallards feed?" })
      }))

    it.effect("the chat-completions endpoint streams the model's answer and forwards history and options", () =>
      Effect.gen(function*() {
        slowReply = false
        const { url, token, agentId } = yield* seeded("Sdk Modeller")
        const client = new OpenAI({ baseURL: `${url}/api/v1/engram/${agentId}`, apiKey: token, maxRetries: 0 })
        const before = chat.requests.length
        const stream = yield* Effect.promise(() =>
          client.chat.completions.create({
            model: agentId,
            messages: [
              { role: "system", content: "Use British spelling." },
              { role: "user", content: "Hi" },
              { role: "assistant", content: "Hello! Ask me about ducks." },
              { role: "user", content: "Where do mallards feed?" }
            ],
            temperature: 0.3,
            max_completion_tokens: 50,
            stop: ["END"],
            stream: true
          })
        )
        const text = yield* Effect.promise(async () => {
          let all = ""
          for await (const chunk of stream) all += chunk.choices[0]?.delta.content ?? ""
          return all
        })
        assert.strictEqual(text, "Mallards feed at the water surface [1]. You asked: Where do mallards feed?")
        const sent = chat.requests.slice(before)
        assert.strictEqual(sent.length, 1)
        const body = sent[0]!
        assert.strictEqual(body.temperature, 0.3)
        assert.strictEqual(body.max_tokens, 50)
        assert.deepStrictEqual(body.stop, ["END"])
        assert.include(String(body.messages[0]!.content), "Use British spelling.")
        assert.deepStrictEqual(body.messages.slice(1).map((m) => [m.role, m.content]), [
          ["user", "Hi"],
          ["assistant", "Hello! Ask me about ducks."],
          ["user", "Where do mallards feed?"]
        ])
      }))

    it.effect("cancel stops a streaming run within a second and records it cancelled", () =>
      Effect.gen(function*() {
        slowReply = true
        const { url, token, agentId } = yield* seeded("Canceller")
        const abortedBefore = chat.aborted
        const result = yield* Effect.promise(async () => {
          const response = await askStream(url, token, agentId, "Tell me everything about ducks")
          let runId = ""
          let cancelled: { status: number; body: any; ms: number } | undefined
          const events = await readEvents(response, (event) => {
            if (event.event === "run.started") runId = event.data.id
            if (event.event === "delta" && cancelled === undefined) {
              const started = Date.now()
              cancelled = { status: 0, body: null, ms: 0 }
              void fetch(`${url}/api/v1/agents/${agentId}/runs/${runId}/cancel`, {
                method: "POST",
                headers: { authorization: `Bearer ${token}` }
              }).then(async (r) => {
                cancelled = { status: r.status, body: await r.json(), ms: Date.now() - started }
              })
            }
            return false
          })
          for (let i = 0; i < 50 && cancelled?.status === 0; i++) await new Promise((r) => setTimeout(r, 50))
          return { events, cancelled: cancelled!, runId }
        })
        assert.strictEqual(result.cancelled.status, 200)
        assert.strictEqual(result.cancelled.body.status, "cancelled")
        assert.isBelow(result.cancelled.ms, 1000)
        const deltas = result.events.filter((e) => e.event === "delta").length
        assert.isBelow(deltas, 30, "generation stopped early")
        const last = result.events[result.events.length - 1]!
        assert.strictEqual(last.event, "done", "a cancelled stream ends with done, saying cancelled")
        assert.strictEqual(last.data.id, result.runId)
        assert.strictEqual(last.data.status, "cancelled")
        const stored = yield* request(url, `/api/v1/agents/${agentId}/runs/${result.runId}`, { token })
        assert.strictEqual(stored.body.status, "cancelled")
        assert.isNotNull(stored.body.finished_at)
        yield* Effect.promise(async () => {
          for (let i = 0; i < 40 && chat.aborted === abortedBefore; i++) await new Promise((r) => setTimeout(r, 50))
        })
        assert.strictEqual(chat.aborted, abortedBefore + 1, "the request to the model was interrupted")
      }))

    it.effect("a client that disconnects from the stream cancels the run", () =>
      Effect.gen(function*() {
        slowReply = true
        const { url, token, agentId } = yield* seeded("Leaver")
        const runId = yield* Effect.promise(async () => {
          const controller = new AbortController()
          const response = await askStream(url, token, agentId, "Tell me everything about ducks", controller.signal)
          let id = ""
          await readEvents(response, (event) => {
            if (event.event === "run.started") id = event.data.id
            if (event.event === "delta") controller.abort()
            return false
          }).catch(() => [])
          return id
        })
        let status = "running"

        for (let i = 0; i < 40 && status === "running"; i++) {
          yield* pause(50)
          status = (yield* request(url, `/api/v1/agents/${agentId}/runs/${runId}`, { token })).body.status
        }
        assert.strictEqual(status, "cancelled")
      }))
  }
)

describe("answers when the server shuts down", () => {
  it.live("a shutdown whose grace runs out ends a live stream with done, cancelled, and records the run cancelled", () =>
    Effect.gen(function*() {
      slowReply = true
      // One second to shut down: a stream still running after half of it is cancelled.
      const settings = yield* freshSettings("pglite", {
        llmBaseUrl: Option.some(chat.url),
        llmModel: "stand-in-chat",
        llmMaxRetries: 0,
        shutdownTimeoutSeconds: 1
      })
      const scope = yield* Scope.make()
      const server = Context.get(yield* Layer.buildWithScope(serverLayer(settings), scope), TestServer)
      const { url, token, agentId } = yield* seeded("Shutdown Watcher").pipe(Effect.provideService(TestServer, server))
      const events = yield* Effect.promise(async () => {
        const response = await askStream(url, token, agentId, "Tell me everything about ducks")
        let stopping: Promise<unknown> | undefined
        const events = await readEvents(response, (event) => {
          if (event.event === "delta" && stopping === undefined) {
            stopping = Effect.runPromise(Scope.close(scope, Exit.void))
          }
          return false
        })
        await stopping
        return events
      })
      const last = events[events.length - 1]!
      assert.strictEqual(last.event, "done", "the stream says how it ended")
      assert.strictEqual(last.data.status, "cancelled")
      assert.isBelow(events.filter((e) => e.event === "delta").length, 60, "generation stopped early")
      const stored = yield* withServer(settings, ({ url }) =>
        request(url, `/api/v1/agents/${agentId}/runs/${last.data.id}`, { token }))
      assert.strictEqual(stored.body.status, "cancelled")
    }).pipe(Effect.scoped), 120_000)
})

layer(freshServer("pglite", {
  llmBaseUrl: Option.some("http://127.0.0.1:9/v1"),
  llmModel: "absent",
  llmMaxRetries: 0,
  llmTimeoutSeconds: 5
}))("answers when the language model fails", (it) => {
  it.effect("ask is 502 llm_failed and the run is recorded as failed", () =>
    Effect.gen(function*() {
      const { url, token, agentId } = yield* seeded("Unlucky")
      const reply = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
        token,
        json: { question: "Where do mallards feed?" }
      })
      assert.strictEqual(reply.status, 502, reply.text)
      assert.strictEqual(reply.body.error.code, "llm_failed")
      const runId = reply.body.error.message.match(/run ([\w-]+)\)/)?.[1]
      const run = yield* request(url, `/api/v1/agents/${agentId}/runs/${runId}`, { token })
      assert.strictEqual(run.body.status, "failed")
      assert.strictEqual(run.body.error.code, "llm_failed")
      assert.notMatch(reply.text, /node_modules|\.ts:\d+/)
    }))
})

describe("runs across restarts", () => {
  it.live("a run left running by a process that went away is recorded as failed (interrupted)", () =>
    Effect.gen(function*() {
      const settings = yield* freshSettings("pglite")
      const left = yield* withServer(settings, ({ url, sql }) =>
        Effect.gen(function*() {
          const token = yield* login(url, "Crasher")
          const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Orphan" } })
          const me = yield* request(url, "/api/v1/auth/me", { token })
          // What a killed process leaves behind: a run still marked running, its heartbeat stopped.
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO runs (agent_id, owner_id, question, status, provider, heartbeat_at)
            VALUES (${agent.body.id}, ${me.body.id}, 'lost?', 'running', 'extractive', now() - interval '5 minutes')
            RETURNING id`
          return { token, agentId: agent.body.id as string, runId: row!.id }
        }))
      yield* withServer(settings, ({ url }) =>
        Effect.gen(function*() {
          const run = yield* request(url, `/api/v1/agents/${left.agentId}/runs/${left.runId}`, { token: left.token })
          assert.strictEqual(run.body.status, "failed")
          assert.strictEqual(run.body.error.code, "interrupted")
          assert.isNotNull(run.body.finished_at)
        }))
    }).pipe(Effect.scoped))
})
