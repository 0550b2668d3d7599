import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { UserId } from "../../src/domain/User.ts"
import { Agents } from "../../src/services/Agents.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { createSource } from "../support/ingest.ts"

const missingId = "00000000-0000-0000-0000-000000000000"

/** A signed-in user: token and id. */
const user = (name: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const token = yield* login(url, name)
    const me = yield* request(url, "/api/v1/auth/me", { token })
    return { url, token, id: me.body.id as UserId }
  })

const createAgent = (url: string, token: string, json: unknown = { name: "Helper" }) =>
  Effect.map(request(url, "/api/v1/agents", { token, json }), (reply) => {
    if (reply.status !== 201) throw new Error(`create agent: ${reply.status} ${reply.text}`)
    return reply.body
  })

const createConversation = (url: string, token: string, agentId: string, json: unknown = {}) =>
  Effect.map(request(url, `/api/v1/agents/${agentId}/conversations`, { token, json }), (reply) => {
    if (reply.status !== 201) throw new Error(`create conversation: ${reply.status} ${reply.text}`)
    return reply.body
  })

const citation = {
  n: 1,
  chunk_id: "c1",
  document_id: "d1",
  source_id: "s1",
  title: "Ducks",
  quote: "Mallards are dabbling ducks."
}
/** A citation stored before chunks kept their messages reads with empty chat fields. */
const noChat = { speaker: null, spoken_at: null, spoken_until: null, messages: [] }

for (const engine of engines) {
  layer(freshServer(engine))(`agents (${engine})`, (it) => {
    it.effect("create, read, list and delete with every default filled", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Ada")
        const created = yield* request(url, "/api/v1/agents", { token, json: { name: "  Helper  " } })
        assert.strictEqual(created.status, 201, created.text)
        const agent = created.body
        assert.isString(agent.id)
        assert.strictEqual(agent.name, "Helper")
        assert.isNull(agent.description)
        assert.strictEqual(agent.instructions, "")
        assert.deepStrictEqual(agent.model_settings, { temperature: null, max_tokens: null, model: null })
        assert.deepStrictEqual(agent.retrieval_settings, { strategy: "multi", top_k: 8, min_score: 0 })
        assert.deepStrictEqual(agent.source_ids, [])
        assert.isFalse(Number.isNaN(Date.parse(agent.created_at)))
        assert.strictEqual(agent.created_at, agent.updated_at)

        const full = yield* createAgent(url, token, {
          name: "Researcher",
          description: "Reads papers",
          instructions: "Answer briefly.",
          model_settings: { temperature: 0.2, max_tokens: 400, model: "llama3" },
          retrieval_settings: { strategy: "vector", top_k: 3, min_score: 0.5 }
        })
        assert.deepStrictEqual(full.model_settings, { temperature: 0.2, max_tokens: 400, model: "llama3" })
        assert.deepStrictEqual(full.retrieval_settings, { strategy: "vector", top_k: 3, min_score: 0.5 })
        assert.strictEqual(full.instructions, "Answer briefly.")
        assert.strictEqual(full.description, "Reads papers")

        assert.deepStrictEqual((yield* request(url, `/api/v1/agents/${agent.id}`, { token })).body, agent)
        const listed = yield* request(url, "/api/v1/agents", { token })
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(listed.body.items.map((a: { id: string }) => a.id), [full.id, agent.id])
        assert.isNull(listed.body.next_cursor)

        const removed = yield* request(url, `/api/v1/agents/${agent.id}`, { method: "DELETE", token })
        assert.strictEqual(removed.status, 204)
        assert.strictEqual(removed.text, "")
        const gone = yield* request(url, `/api/v1/agents/${agent.id}`, { token })
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.body.error.code, "agent_not_found")
        const again = yield* request(url, `/api/v1/agents/${agent.id}`, { method: "DELETE", token })
        assert.strictEqual(again.status, 404)
      }))

    it.effect("agents are paginated newest first", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Paige")
        const ids: Array<string> = []
        for (const name of ["one", "two", "three"]) ids.push((yield* createAgent(url, token, { name })).id)
        const first = yield* request(url, "/api/v1/agents?limit=2", { token })
        assert.deepStrictEqual(first.body.items.map((a: { id: string }) => a.id), [ids[2], ids[1]])
        const second = yield* request(url, `/api/v1/agents?limit=2&cursor=${first.body.next_cursor}`, { token })
        assert.deepStrictEqual(second.body.items.map((a: { id: string }) => a.id), [ids[0]])
        assert.isNull(second.body.next_cursor)
        const bad = yield* request(url, "/api/v1/agents?cursor=garbage", { token })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.body.error.code, "invalid_cursor")
      }))

    it.effect("PATCH changes only the given fields and merges settings field by field", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Pat")
        const agent = yield* createAgent(url, token, {
          name: "Tuner",
          description: "first",
          instructions: "Be kind.",
          model_settings: { temperature: 0.5, max_tokens: 500 },
          retrieval_settings: { strategy: "lexical", top_k: 5 }
        })
        const path = `/api/v1/agents/${agent.id}`
        const patched = yield* request(url, path, {
          method: "PATCH",
          token,
          json: { model_settings: { max_tokens: null, model: "mistral" }, retrieval_settings: { min_score: 0.25 } }
        })
        assert.strictEqual(patched.status, 200, patched.text)
        assert.strictEqual(patched.body.name, "Tuner")
        assert.strictEqual(patched.body.description, "first")
        assert.strictEqual(patched.body.instructions, "Be kind.")
        assert.deepStrictEqual(patched.body.model_settings, { temperature: 0.5, max_tokens: null, model: "mistral" })
        assert.deepStrictEqual(patched.body.retrieval_settings, { strategy: "lexical", top_k: 5, min_score: 0.25 })
        assert.isTrue(Date.parse(patched.body.updated_at) >= Date.parse(agent.updated_at))

        const renamed = yield* request(url, path, {
          method: "PATCH",
          token,
          json: { name: " Renamed ", description: null, instructions: "" }
        })
        assert.strictEqual(renamed.body.name, "Renamed")
        assert.isNull(renamed.body.description)
        assert.strictEqual(renamed.body.instructions, "")
        assert.deepStrictEqual(renamed.body.model_settings, patched.body.model_settings)

        const empty = yield* request(url, path, { method: "PATCH", token, json: {} })
        assert.strictEqual(empty.status, 200)
        assert.deepStrictEqual(
          { ...empty.body, updated_at: null },
          { ...renamed.body, updated_at: null }
        )
        assert.deepStrictEqual((yield* request(url, path, { token })).body, empty.body)
      }))

    it.effect("out-of-range values and unknown fields are 422 naming the field", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Val")
        const agent = yield* createAgent(url, token)
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{}, "body.name"],
          [{ name: "" }, "body.name"],
          [{ name: "   " }, "body.name"],
          [{ name: "x".repeat(201) }, "body.name"],
          [{ name: "x", description: "d".repeat(2001) }, "body.description"],
          [{ name: "x", instructions: "i".repeat(20_001) }, "body.instructions"],
          [{ name: "x", model_settings: { temperature: 3 } }, "body.model_settings.temperature"],
          [{ name: "x", model_settings: { temperature: -0.1 } }, "body.model_settings.temperature"],
          [{ name: "x", model_settings: { max_tokens: 0 } }, "body.model_settings.max_tokens"],
          [{ name: "x", model_settings: { max_tokens: 32_769 } }, "body.model_settings.max_tokens"],
          [{ name: "x", model_settings: { max_tokens: 1.5 } }, "body.model_settings.max_tokens"],
          [{ name: "x", model_settings: { model: "m".repeat(201) } }, "body.model_settings.model"],
          [{ name: "x", model_settings: { top_p: 1 } }, "body.model_settings.top_p"],
          [{ name: "x", retrieval_settings: { top_k: 0 } }, "body.retrieval_settings.top_k"],
          [{ name: "x", retrieval_settings: { top_k: 51 } }, "body.retrieval_settings.top_k"],
          [{ name: "x", retrieval_settings: { strategy: "graph" } }, "body.retrieval_settings.strategy"],
          [{ name: "x", retrieval_settings: { min_score: -1 } }, "body.retrieval_settings.min_score"],
          [{ name: "x", source_ids: Array.from({ length: 257 }, (_, i) => `s${i}`) }, "body.source_ids"],
          [{ name: "x", owner_id: "someone" }, "body.owner_id"]
        ]
        for (const [json, path] of cases) {
          const reply = yield* request(url, "/api/v1/agents", { token, json })
          const label = JSON.stringify(json).slice(0, 200)
          assert.strictEqual(reply.status, 422, label)
          assert.strictEqual(reply.body.error.code, "validation_failed")
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path, label)
        }
        const patches: ReadonlyArray<readonly [unknown, string]> = [
          [{ name: "" }, "body.name"],
          [{ model_settings: { temperature: 3 } }, "body.model_settings.temperature"],
          [{ retrieval_settings: { top_k: 51 } }, "body.retrieval_settings.top_k"],
          [{ id: "other" }, "body.id"]
        ]
        for (const [json, path] of patches) {
          const reply = yield* request(url, `/api/v1/agents/${agent.id}`, { method: "PATCH", token, json })
          assert.strictEqual(reply.status, 422, JSON.stringify(json))
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path)
        }
        const bindings = yield* request(url, `/api/v1/agents/${agent.id}/bindings`, {
          method: "PUT",
          token,
          json: { source_ids: "all" }
        })
        assert.strictEqual(bindings.status, 422)
        const title = yield* request(url, `/api/v1/agents/${agent.id}/conversations`, {
          token,
          json: { title: "t".repeat(201) }
        })
        assert.strictEqual(title.status, 422)
        assert.strictEqual(title.body.error.issues[0].path, "body.title")
        const limit = yield* request(url, `/api/v1/agents/${agent.id}/conversations?limit=0`, { token })
        assert.strictEqual(limit.status, 422)
        assert.deepStrictEqual((yield* request(url, `/api/v1/agents/${agent.id}`, { token })).body, agent)
      }))

    it.effect("bindings are replaced as a set, sorted, and a source of another user is 404 changing nothing", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Bea")
        const stranger = yield* user("Stranger")
        const a = yield* createSource(url, token, "a")
        const b = yield* createSource(url, token, "b")
        const theirs = yield* createSource(url, stranger.token, "theirs")
        const sorted = [a, b].sort()

        const agent = yield* createAgent(url, token, { name: "Binder", source_ids: [b, a, b] })
        assert.deepStrictEqual(agent.source_ids, sorted)
        const path = `/api/v1/agents/${agent.id}/bindings`
        assert.deepStrictEqual((yield* request(url, path, { token })).body, { source_ids: sorted })

        const cleared = yield* request(url, path, { method: "PUT", token, json: { source_ids: [] } })
        assert.strictEqual(cleared.status, 200)
        assert.deepStrictEqual(cleared.body, { source_ids: [] })
        const put = yield* request(url, path, { method: "PUT", token, json: { source_ids: [a] } })
        assert.deepStrictEqual(put.body, { source_ids: [a] })
        assert.deepStrictEqual((yield* request(url, `/api/v1/agents/${agent.id}`, { token })).body.source_ids, [a])

        for (const foreign of [theirs, missingId]) {
          const refused = yield* request(url, path, { method: "PUT", token, json: { source_ids: [b, foreign] } })
          assert.strictEqual(refused.status, 404)
          assert.strictEqual(refused.body.error.code, "source_not_found")
          assert.include(refused.body.error.message, foreign)
          assert.deepStrictEqual((yield* request(url, path, { token })).body, { source_ids: [a] })
        }
        const patch = yield* request(url, `/api/v1/agents/${agent.id}`, {
          method: "PATCH",
          token,
          json: { name: "Changed", source_ids: [theirs] }
        })
        assert.strictEqual(patch.status, 404)
        assert.strictEqual(patch.body.error.code, "source_not_found")
        const unchanged = yield* request(url, `/api/v1/agents/${agent.id}`, { token })
        assert.strictEqual(unchanged.body.name, "Binder")
        assert.deepStrictEqual(unchanged.body.source_ids, [a])
        const patched = yield* request(url, `/api/v1/agents/${agent.id}`, {
          method: "PATCH",
          token,
          json: { source_ids: [b] }
        })
        assert.deepStrictEqual(patched.body.source_ids, [b])

        const before = (yield* request(url, "/api/v1/agents", { token })).body.items.length
        const create = yield* request(url, "/api/v1/agents", { token, json: { name: "Nope", source_ids: [a, theirs] } })
        assert.strictEqual(create.status, 404)
        assert.strictEqual(create.body.error.code, "source_not_found")
        assert.strictEqual((yield* request(url, "/api/v1/agents", { token })).body.items.length, before)
      }))

    it.effect("deleting a bound source removes it from the bindings", () =>
      Effect.gen(function*() {
        const { url, token, id } = yield* user("Dora")
        const keep = yield* createSource(url, token, "keep")
        const drop = yield* createSource(url, token, "drop")
        const agent = yield* createAgent(url, token, { name: "Bound", source_ids: [keep, drop] })
        const deleted = yield* request(url, `/api/v1/sources/${drop}`, { method: "DELETE", token })
        assert.strictEqual(deleted.status, 200)
        const bindings = yield* request(url, `/api/v1/agents/${agent.id}/bindings`, { token })
        assert.deepStrictEqual(bindings.body, { source_ids: [keep] })
        const agents = yield* Agents
        assert.deepStrictEqual(yield* agents.boundSourceIds(id, agent.id), [keep])
      }))

    it.effect("another user's agent and conversation behave exactly like missing ones on every route", () =>
      Effect.gen(function*() {
        const owner = yield* user("Owner")
        const intruder = yield* user("Intruder")
        const { url } = owner
        const agent = yield* createAgent(url, owner.token, { name: "Private" })
        const conversation = yield* createConversation(url, owner.token, agent.id, { title: "secret" })
        const base = `/api/v1/agents/${agent.id}`
        const conversationPath = `${base}/conversations/${conversation.id}`
        const routes: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["GET", base],
          ["PATCH", base, { name: "mine" }],
          ["DELETE", base],
          ["GET", `${base}/bindings`],
          ["PUT", `${base}/bindings`, { source_ids: [] }],
          ["POST", `${base}/conversations`, {}],
          ["GET", `${base}/conversations`],
          ["GET", conversationPath],
          ["DELETE", conversationPath],
          ["GET", `${conversationPath}/messages`]
        ]
        for (const [method, path, json] of routes) {
          const body = json === undefined ? {} : { json }
          const theirs = yield* request(url, path, { method, token: intruder.token, ...body })
          const missing = yield* request(url, path.replace(agent.id, missingId), {
            method,
            token: owner.token,
            ...body
          })
          assert.strictEqual(theirs.status, 404, `${method} ${path}`)
          assert.strictEqual(theirs.body.error.code, "agent_not_found", `${method} ${path}`)
          assert.strictEqual(theirs.body.error.code, missing.body.error.code, `${method} ${path}`)
          assert.notInclude(theirs.text, "secret")
        }

        const ownAgent = yield* createAgent(url, intruder.token, { name: "Own" })
        const foreignConversation = `/api/v1/agents/${ownAgent.id}/conversations/${conversation.id}`
        const foreignRoutes: ReadonlyArray<readonly [string, string]> = [
          ["GET", foreignConversation],
          ["DELETE", foreignConversation],
          ["GET", `${foreignConversation}/messages`]
        ]
        for (const [method, path] of foreignRoutes) {
          const theirs = yield* request(url, path, { method, token: intruder.token })
          const missing = yield* request(url, path.replace(conversation.id, missingId), { method, token: intruder.token })
          assert.strictEqual(theirs.status, 404, `${method} ${path}`)
          assert.strictEqual(theirs.body.error.code, "conversation_not_found")
          assert.strictEqual(missing.body.error.code, "conversation_not_found")
        }
        // The owner's own second agent cannot reach the first agent's conversation either.
        const sibling = yield* createAgent(url, owner.token, { name: "Sibling" })
        const crossed = yield* request(url, `/api/v1/agents/${sibling.id}/conversations/${conversation.id}`, {
          token: owner.token
        })
        assert.strictEqual(crossed.body.error.code, "conversation_not_found")

        const listed = yield* request(url, "/api/v1/agents", { token: intruder.token })
        assert.deepStrictEqual(listed.body.items.map((a: { id: string }) => a.id), [ownAgent.id])
        const agents = yield* Agents
        const history = yield* Effect.flip(agents.history(intruder.id, conversation.id, 10))
        assert.strictEqual(history.reason._tag, "ConversationNotFound")
        const bound = yield* Effect.flip(agents.boundSourceIds(intruder.id, agent.id))
        assert.strictEqual(bound.reason._tag, "AgentNotFound")
        assert.strictEqual((yield* request(url, conversationPath, { token: owner.token })).status, 200)
        assert.strictEqual((yield* request(url, base, { token: owner.token })).body.name, "Private")
      }))

    it.effect("conversations are created, listed by latest activity, read and deleted", () =>
      Effect.gen(function*() {
        const { url, token } = yield* user("Cora")
        const agent = yield* createAgent(url, token, { name: "Talker" })
        const base = `/api/v1/agents/${agent.id}/conversations`
        const first = yield* createConversation(url, token, agent.id, { title: "  First  " })
        assert.strictEqual(first.title, "First")
        assert.strictEqual(first.agent_id, agent.id)
        assert.strictEqual(first.message_count, 0)
        const second = yield* createConversation(url, token, agent.id)
        assert.isNull(second.title)
        const third = yield* createConversation(url, token, agent.id, { title: null })
        assert.isNull(third.title)

        const page1 = yield* request(url, `${base}?limit=2`, { token })
        assert.strictEqual(page1.status, 200)
        assert.deepStrictEqual(page1.body.items.map((c: { id: string }) => c.id), [third.id, second.id])
        const page2 = yield* request(url, `${base}?limit=2&cursor=${page1.body.next_cursor}`, { token })
        assert.deepStrictEqual(page2.body.items.map((c: { id: string }) => c.id), [first.id])
        assert.isNull(page2.body.next_cursor)

        const agents = yield* Agents
        yield* agents.appendMessage({
          conversationId: first.id,
          role: "user",
          content: "hi",
          runId: null,
          citations: []
        })
        const active = yield* request(url, base, { token })
        assert.deepStrictEqual(active.body.items.map((c: { id: string }) => c.id), [first.id, third.id, second.id])
        const read = yield* request(url, `${base}/${first.id}`, { token })
        assert.strictEqual(read.body.message_count, 1)
        assert.isTrue(Date.parse(read.body.updated_at) >= Date.parse(read.body.created_at))

        const removed = yield* request(url, `${base}/${second.id}`, { method: "DELETE", token })
        assert.strictEqual(removed.status, 204)
        const gone = yield* request(url, `${base}/${second.id}`, { token })
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.body.error.code, "conversation_not_found")
        assert.deepStrictEqual(
          (yield* request(url, base, { token })).body.items.map((c: { id: string }) => c.id),
          [first.id, third.id]
        )
      }))

    it.effect("messages are listed oldest first with their run and citations", () =>
      Effect.gen(function*() {
        const { url, token, id } = yield* user("Mia")
        const { sql } = yield* TestServer
        const agent = yield* createAgent(url, token, { name: "Historian" })
        const conversation = yield* createConversation(url, token, agent.id)
        const path = `/api/v1/agents/${agent.id}/conversations/${conversation.id}/messages`
        const empty = yield* request(url, path, { token })
        assert.strictEqual(empty.status, 200)
        assert.deepStrictEqual(empty.body, { items: [], next_cursor: null })

        // Microseconds apart within one millisecond: pagination must neither repeat nor skip them.
        yield* sql`
          INSERT INTO messages (id, conversation_id, role, content, run_id, citations, created_at) VALUES
            ('m3', ${conversation.id}, 'assistant', 'Mallards.', 'run-1', ${JSON.stringify([citation])}::jsonb,
              '2024-05-01T10:00:00.000300Z'),
            ('m1', ${conversation.id}, 'user', 'Which ducks dabble?', 'run-1', '[]'::jsonb,
              '2024-05-01T10:00:00.000100Z'),
            ('m2', ${conversation.id}, 'user', 'And where?', NULL, '[]'::jsonb, '2024-05-01T10:00:00.000200Z')`
        const all = yield* request(url, path, { token })
        assert.deepStrictEqual(all.body.items.map((m: { id: string }) => m.id), ["m1", "m2", "m3"])
        assert.deepStrictEqual(all.body.items[2], {
          id: "m3",
          conversation_id: conversation.id,
          role: "assistant",
          content: "Mallards.",
          run_id: "run-1",
          citations: [{ ...citation, ...noChat }],
          created_at: "2024-05-01T10:00:00.000Z"
        })
        assert.isNull(all.body.items[1].run_id)
        assert.deepStrictEqual(all.body.items[0].citations, [])

        const seen: Array<string> = []
        let cursor: string | null = null
        do {
          const query = cursor === null ? "?limit=1" : `?limit=1&cursor=${cursor}`
          const reply: { body: any } = yield* request(url, path + query, { token })
          seen.push(...reply.body.items.map((m: { id: string }) => m.id))
          cursor = reply.body.next_cursor
        } while (cursor !== null && seen.length < 10)
        assert.deepStrictEqual(seen, ["m1", "m2", "m3"])

        const agents = yield* Agents
        const answer = yield* agents.appendMessage({
          conversationId: conversation.id,
          role: "assistant",
          content: "In ponds.",
          runId: "run-2",
          citations: [{ ...citation, ...noChat, n: 2 }]
        })
        assert.strictEqual(answer.role, "assistant")
        assert.deepStrictEqual(answer.citations, [{ ...citation, ...noChat, n: 2 }])
        const question = yield* agents.appendMessage({
          conversationId: conversation.id,
          role: "user",
          content: "Thanks",
          runId: null,
          citations: []
        })
        assert.deepStrictEqual(
          (yield* request(url, path, { token })).body.items.map((m: { id: string }) => m.id),
          ["m1", "m2", "m3", answer.id, question.id]
        )
        assert.deepStrictEqual(yield* agents.history(id, conversation.id, 2), [
          { role: "assistant", content: "In ponds." },
          { role: "user", content: "Thanks" }
        ])
        assert.strictEqual((yield* agents.history(id, conversation.id, 50)).length, 5)
        const read = yield* request(url, `/api/v1/agents/${agent.id}/conversations/${conversation.id}`, { token })
        assert.strictEqual(read.body.message_count, 5)
        assert.strictEqual(read.body.updated_at, question.created_at)

        const deleted = yield* Effect.flip(
          agents.appendMessage({ conversationId: missingId, role: "user", content: "x", runId: null, citations: [] })
        )
        assert.strictEqual(deleted.reason._tag, "ConversationNotFound")
      }))

    it.effect("deleting an agent deletes its bindings, conversations, messages and runs but not its sources", () =>
      Effect.gen(function*() {
        const { url, token, id } = yield* user("Cass")
        const { sql } = yield* TestServer
        const source = yield* createSource(url, token, "kept")
        const agent = yield* createAgent(url, token, { name: "Doomed", source_ids: [source] })
        const conversation = yield* createConversation(url, token, agent.id)
        const agents = yield* Agents
        yield* agents.appendMessage({
          conversationId: conversation.id,
          role: "user",
          content: "q",
          runId: null,
          citations: []
        })
        yield* sql`
          INSERT INTO runs (agent_id, owner_id, conversation_id, question, status, provider)
          VALUES (${agent.id}, ${id}, ${conversation.id}, 'q', 'completed', 'extractive')`
        const counts = Effect.map(
          sql<{ agent_bindings: number; conversations: number; messages: number; runs: number }>`
            SELECT
              (SELECT count(*) FROM agent_bindings WHERE agent_id = ${agent.id})::int AS agent_bindings,
              (SELECT count(*) FROM conversations WHERE agent_id = ${agent.id})::int AS conversations,
              (SELECT count(*) FROM messages WHERE conversation_id = ${conversation.id})::int AS messages,
              (SELECT count(*) FROM runs WHERE agent_id = ${agent.id})::int AS runs`,
          (rows) => rows[0]
        )
        assert.deepStrictEqual(yield* counts, { agent_bindings: 1, conversations: 1, messages: 1, runs: 1 })
        const removed = yield* request(url, `/api/v1/agents/${agent.id}`, { method: "DELETE", token })
        assert.strictEqual(removed.status, 204)
        assert.deepStrictEqual(yield* counts, { agent_bindings: 0, conversations: 0, messages: 0, runs: 0 })
        assert.strictEqual((yield* request(url, `/api/v1/sources/${source}`, { token })).status, 200)
        const conversations = yield* request(url, `/api/v1/agents/${agent.id}/conversations`, { token })
        assert.strictEqual(conversations.body.error.code, "agent_not_found")
      }))

    it.effect("the OpenAPI document describes every agents route", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec = yield* request(url, "/openapi.json")
        const paths = Object.keys(spec.body.paths).filter((path) => path.startsWith("/api/v1/agents"))
        assert.deepStrictEqual(paths.sort(), [
          "/api/v1/agents",
          "/api/v1/agents/{agent_id}",
          "/api/v1/agents/{agent_id}/bindings",
          "/api/v1/agents/{agent_id}/conversations",
          "/api/v1/agents/{agent_id}/conversations/{conversation_id}",
          "/api/v1/agents/{agent_id}/ask",
          "/api/v1/agents/{agent_id}/conversations/{conversation_id}/messages",
          "/api/v1/agents/{agent_id}/runs/{run_id}",
          "/api/v1/agents/{agent_id}/runs/{run_id}/cancel"
        ].sort())
        for (const path of paths) {
          const operations = spec.body.paths[path] as Record<string, { summary?: string; responses: object }>
          for (const [method, operation] of Object.entries(operations)) {
            assert.isString(operation.summary, `${method} ${path}`)
            for (const status of ["401", "422", "500"]) {
              assert.property(operation.responses, status, `${method} ${path}`)
            }
            if (path !== "/api/v1/agents") assert.property(operation.responses, "404", `${method} ${path}`)
          }
        }
        assert.property(spec.body.paths["/api/v1/agents/{agent_id}"].delete.responses, "204")
      }))
  })
}
