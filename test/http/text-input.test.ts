import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { upload, waitForDocument } from "../support/ingest.ts"

/** The two kinds of string no field may hold: NUL, and a UTF-16 surrogate without its pair. */
const unstorable = [{ kind: "NUL", value: "a\u0000b" }, { kind: "lone surrogate", value: "a\ud800b" }] as const

interface Fixture {
  readonly sourceId: string
  readonly agentId: string
  readonly conversationId: string
}

interface BodyCase {
  readonly method: string
  readonly path: (f: Fixture) => string
  readonly body: (bad: string) => unknown
  readonly issue: string
}

/** One case per kind of user-typed field; `issue` is the path the 422 must name. */
const bodyCases: ReadonlyArray<BodyCase> = [
  { method: "PUT", path: () => "/system/model-settings", body: (bad) => ({ llm_model: bad }), issue: "body.llm_model" },
  { method: "PUT", path: () => "/system/preferences", body: (bad) => ({ timezone: bad }), issue: "body.timezone" },
  {
    method: "POST",
    path: () => "/sources",
    body: (bad) => ({ name: bad, connector_kind: "file_upload", config: {} }),
    issue: "body.name"
  },
  {
    method: "POST",
    path: () => "/sources",
    body: (bad) => ({ name: "s", description: bad, connector_kind: "file_upload", config: {} }),
    issue: "body.description"
  },
  {
    method: "POST",
    path: () => "/sources",
    body: (bad) => ({ name: "s", connector_kind: "web", config: { urls: [`http://example.com/${bad}`] } }),
    issue: "body.config.urls[0]"
  },
  {
    method: "POST",
    path: () => "/sources",
    body: (bad) => ({ name: "s", connector_kind: "folder", config: { path: `/tmp/${bad}` } }),
    issue: "body.config.path"
  },
  { method: "PATCH", path: (f) => `/sources/${f.sourceId}`, body: (bad) => ({ name: bad }), issue: "body.name" },
  {
    method: "POST",
    path: (f) => `/sources/${f.sourceId}/documents/ingest`,
    body: (bad) => ({ title: bad, text: "text" }),
    issue: "body.title"
  },
  {
    method: "POST",
    path: (f) => `/sources/${f.sourceId}/documents/ingest`,
    body: (bad) => ({ title: "t", text: `some ${bad} text` }),
    issue: "body.text"
  },
  {
    method: "POST",
    path: (f) => `/sources/${f.sourceId}/documents/ingest`,
    body: (bad) => ({ title: "t", messages: [{ speaker: "Ada", content: "hi" }, { speaker: "Bo", content: bad }] }),
    issue: "body.messages[1].content"
  },
  {
    method: "POST",
    path: (f) => `/sources/${f.sourceId}/documents/ingest`,
    body: (bad) => ({ title: "t", messages: [{ speaker: bad, content: "hi" }] }),
    issue: "body.messages[0].speaker"
  },
  { method: "POST", path: () => "/search", body: (bad) => ({ query: bad }), issue: "body.query" },
  {
    method: "POST",
    path: () => "/search",
    body: (bad) => ({ query: "q", source_ids: [bad] }),
    issue: "body.source_ids[0]"
  },
  { method: "POST", path: (f) => `/sources/${f.sourceId}/search`, body: (bad) => ({ query: bad }), issue: "body.query" },
  { method: "POST", path: () => "/agents", body: (bad) => ({ name: bad }), issue: "body.name" },
  { method: "POST", path: () => "/agents", body: (bad) => ({ name: "a", instructions: bad }), issue: "body.instructions" },
  {
    method: "POST",
    path: () => "/agents",
    body: (bad) => ({ name: "a", model_settings: { model: bad } }),
    issue: "body.model_settings.model"
  },
  { method: "PATCH", path: (f) => `/agents/${f.agentId}`, body: (bad) => ({ description: bad }), issue: "body.description" },
  {
    method: "PUT",
    path: (f) => `/agents/${f.agentId}/bindings`,
    body: (bad) => ({ source_ids: [bad] }),
    issue: "body.source_ids[0]"
  },
  {
    method: "POST",
    path: (f) => `/agents/${f.agentId}/conversations`,
    body: (bad) => ({ title: bad }),
    issue: "body.title"
  },
  { method: "POST", path: (f) => `/agents/${f.agentId}/ask`, body: (bad) => ({ question: bad }), issue: "body.question" },
  {
    method: "POST",
    path: (f) => `/agents/${f.agentId}/ask`,
    body: (bad) => ({ question: "q", conversation_id: bad }),
    issue: "body.conversation_id"
  },
  {
    method: "POST",
    path: (f) => `/agents/${f.agentId}/conversations/${f.conversationId}/messages`,
    body: (bad) => ({ content: bad }),
    issue: "body.content"
  }
]

/** Path and query parameters, sent raw (percent-encoded) as a client would. */
const urlCases: ReadonlyArray<{ readonly path: (f: Fixture, bad: string) => string; readonly issue: string }> = [
  { path: (_, bad) => `/sources/${bad}`, issue: "path.source_id" },
  { path: (f, bad) => `/sources/${f.sourceId}/documents/${bad}`, issue: "path.document_id" },
  { path: (_, bad) => `/agents/${bad}`, issue: "path.agent_id" },
  { path: (f, bad) => `/agents/${f.agentId}/conversations/${bad}`, issue: "path.conversation_id" },
  { path: (f, bad) => `/agents/${f.agentId}/runs/${bad}`, issue: "path.run_id" },
  { path: (_, bad) => `/jobs/${bad}`, issue: "path.job_id" },
  { path: (_, bad) => `/sources?cursor=${bad}`, issue: "query.cursor" },
  { path: (f, bad) => `/sources/${f.sourceId}/entities?q=${bad}`, issue: "query.q" },
  { path: (f, bad) => `/sources/${f.sourceId}/events?kind=${bad}`, issue: "query.kind" },
  { path: (_, bad) => `/graph?source_ids=${bad}`, issue: "query.source_ids[0]" }
]


/** A JSON text's escapes of unpaired surrogates (JSON.stringify writes them as \\udxxx). */
const textProblemIn = (json: string) => /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i.exec(json)?.[0]

const tables = ["users", "sources", "documents", "agents", "conversations", "messages", "runs", "jobs"]

for (const engine of engines) {
  layer(freshServer(engine))(`NUL and lone surrogates (${engine})`, (it) => {
    const setUp = Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "nul-tester")
      const source = yield* request(url, "/api/v1/sources", {
        token,
        json: { name: "notes", connector_kind: "file_upload", config: {} }
      })
      const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "helper" } })
      const conversation = yield* request(url, `/api/v1/agents/${agent.body.id}/conversations`, { token, json: {} })
      const fixture: Fixture = {
        sourceId: source.body.id,
        agentId: agent.body.id,
        conversationId: conversation.body.id
      }
      return { url, token, fixture }
    })

    const rowCounts = Effect.gen(function*() {
      const { sql } = yield* TestServer
      const counts: Record<string, number> = {}
      for (const table of tables) {
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)}`
        counts[table] = rows[0]!.n
      }
      return counts
    })

    it.effect("every kind of body field refuses NUL and lone surrogates with 422 naming it; nothing is stored", () =>
      Effect.gen(function*() {
        const { url, token, fixture } = yield* setUp
        const before = yield* rowCounts
        for (const { kind, value } of unstorable) {
          for (const testCase of bodyCases) {
            const path = testCase.path(fixture)
            const reply = yield* request(url, `/api/v1${path}`, {
              method: testCase.method,
              token,
              json: testCase.body(value)
            })
            const label = `${testCase.method} ${path} ${testCase.issue} (${kind})`
            assert.strictEqual(reply.status, 422, `${label}: ${reply.text}`)
            assert.strictEqual(reply.body.error.code, "validation_failed", label)
            const named = reply.body.error.issues.find((issue: { path: string }) => issue.path === testCase.issue)
            assert.isDefined(named, `${label}: ${reply.text}`)
            assert.match(named.message, kind === "NUL" ? /NUL/ : /surrogate/, label)
          }
        }
        assert.deepStrictEqual(yield* rowCounts, before)
      }))

    it.effect("login refuses NUL and lone surrogates in the name and password before creating anyone", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = yield* rowCounts
        for (const { value } of unstorable) {
          const name = yield* request(url, "/api/v1/auth/login", { json: { name: value } })
          assert.strictEqual(name.status, 422, name.text)
          assert.strictEqual(name.body.error.issues[0].path, "body.name")
          const password = yield* request(url, "/api/v1/auth/login", { json: { name: "someone", password: value } })
          assert.strictEqual(password.status, 422, password.text)
          assert.strictEqual(password.body.error.issues[0].path, "body.password")
        }
        assert.deepStrictEqual(yield* rowCounts, before)
      }))

    it.effect("the OpenAI-compatible endpoint refuses them with 400 naming the parameter", () =>
      Effect.gen(function*() {
        const { url, token, fixture } = yield* setUp
        const path = `/api/v1/engram/${fixture.agentId}/chat/completions`
        for (const { value } of unstorable) {
          const plain = yield* request(url, path, { token, json: { messages: [{ role: "user", content: value }] } })
          assert.strictEqual(plain.status, 400, plain.text)
          assert.strictEqual(plain.body.error.param, "messages[0].content")
          const parts = yield* request(url, path, {
            token,
            json: { messages: [{ role: "user", content: [{ type: "text", text: value }] }] }
          })
          assert.strictEqual(parts.status, 400, parts.text)
          const stop = yield* request(url, path, {
            token,
            json: { messages: [{ role: "user", content: "hi" }], stop: value }
          })
          assert.strictEqual(stop.status, 400, stop.text)
          assert.strictEqual(stop.body.error.param, "stop")
        }
      }))

    it.effect("uploads: text formats with NUL bytes and JSON with \\u0000 or a lone surrogate escape are 415 up front", () =>
      Effect.gen(function*() {
        const { url, token, fixture } = yield* setUp
        const before = yield* rowCounts
        const encode = (text: string) => new TextEncoder().encode(text)
        const files = [
          { name: "notes.txt", bytes: encode("plain \u0000 text") },
          { name: "notes.md", bytes: encode("# Title\n\nbody\u0000") },
          { name: "data.json", bytes: encode("{\"a\": \"x\\u0000y\"}") },
          { name: "data.json", bytes: encode("[\"x\\ud800y\"]") },
          { name: "date.txt", bytes: encode("fine") }
        ]
        for (const [index, file] of files.entries()) {
          const reply = index < 4
            ? yield* upload(url, token, fixture.sourceId, [file])
            : yield* upload(url, token, fixture.sourceId, [file], { date: "2024-01-01\u0000" })
          assert.strictEqual(reply.status, index < 4 ? 415 : 422, `${file.name}: ${reply.text}`)
          if (index < 4) assert.match(reply.body.error.message, new RegExp(file.name.replace(".", "\\.")))
        }
        assert.deepStrictEqual(yield* rowCounts, before)
        const escaped = yield* upload(url, token, fixture.sourceId, [{
          name: "ok.json",
          bytes: encode("{\"path\": \"C:\\\\u0000dir\"}")
        }])
        assert.strictEqual(escaped.status, 202, escaped.text)
        const document = yield* waitForDocument(url, token, fixture.sourceId, escaped.body.documents?.[0]?.id ?? escaped.body[0]?.id)
        assert.strictEqual(document.status, "ready", JSON.stringify(document))
      }))

    it.effect("text cut to a length never splits an emoji: a citation quote and a preview stay well-formed", () =>
      Effect.gen(function*() {
        const { url, token } = yield* setUp
        const source = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "emoji", connector_kind: "file_upload", config: {} }
        })
        const opening = "Mallards feed at the water surface in shallow ponds"
        const head = `${opening}${" a".repeat(224)}`
        const text = `${head}${"\u{1F986} duck ".repeat(40)}. Ducks nest near water.`
        assert.strictEqual(text.charCodeAt(499), 0xd83e, "the quote's 500th code unit is a high surrogate")
        const accepted = yield* request(url, `/api/v1/sources/${source.body.id}/documents/ingest`, {
          token,
          json: { title: "ducks", text }
        })
        const document = yield* waitForDocument(url, token, source.body.id, accepted.body.id)
        assert.strictEqual(document.status, "ready", JSON.stringify(document))
        const preview = yield* request(url, `/api/v1/sources/${source.body.id}/documents/${document.id}/preview`, { token })
        assert.strictEqual(preview.status, 200, preview.text)
        assert.isUndefined(textProblemIn(preview.text), "preview")
        const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "ducks", source_ids: [source.body.id] } })
        const reply = yield* request(url, `/api/v1/agents/${agent.body.id}/ask`, {
          token,
          json: { question: "Where do mallards feed?" }
        })
        assert.strictEqual(reply.status, 200, reply.text)
        assert.strictEqual(reply.body.status, "completed", reply.text)
        assert.isAtLeast(reply.body.citations.length, 1, reply.text)
        assert.isUndefined(textProblemIn(reply.text), "answer")
      }))

    it.effect("%00 in a path or query parameter is 422 naming the parameter", () =>
      Effect.gen(function*() {
        const { url, token, fixture } = yield* setUp
        for (const testCase of urlCases) {
          const path = testCase.path(fixture, "x%00y")
          const reply = yield* request(url, `/api/v1${path}`, { token })
          assert.strictEqual(reply.status, 422, `${path}: ${reply.text}`)
          const named = reply.body.error.issues.find((issue: { path: string }) => issue.path === testCase.issue)
          assert.isDefined(named, `${path}: ${reply.text}`)
          assert.match(named.message, /NUL/)
        }
      }))

    it.effect("a URL whose percent-encoding is not UTF-8 (an encoded lone surrogate) is 400 invalid_url_encoding", () =>
      Effect.gen(function*() {
        const { url, token, fixture } = yield* setUp
        for (const value of ["x%ED%A0%80y", "x%FFy", "x%E2%82"]) {
          for (const testCase of urlCases) {
            const path = testCase.path(fixture, value)
            const reply = yield* request(url, `/api/v1${path}`, { token })
            assert.strictEqual(reply.status, 400, `${path}: ${reply.text}`)
            assert.strictEqual(reply.body.error.code, "invalid_url_encoding", path)
          }
        }
      }))
  })
}
