import { assert, layer } from "@effect/vitest"
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client"
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

interface Seeded {
  readonly url: string
  readonly owner: string
  readonly intruder: string
  readonly notes: string
  readonly diary: string
  readonly foreign: string
  readonly document: string
  readonly agent: string
}

const endpoint = (url: string) => new URL(`${url}/api/v1/mcp/`)

/** A client of the 2.x line speaking the stateless 2026-07-28 revision (server/discover, no session). */
const modern = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new ModernClient({ name: "engram-test", version: "1.0.0" }, {
        versionNegotiation: { mode: { pin: "2026-07-28" } }
      })
      await client.connect(new ModernTransport(endpoint(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** A client of the 1.x line: initialize, then a session (Mcp-Session-Id). */
const legacy = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new LegacyClient({ name: "engram-test-legacy", version: "1.0.0" })
      await client.connect(new LegacyTransport(endpoint(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const structured = (result: any) => result.structuredContent as any
const errorText = (result: any) => {
  assert.isTrue(result.isError, `expected a tool error, got ${JSON.stringify(result)}`)
  return (result.content as Array<{ text: string }>).map((part) => part.text).join(" ")
}

const seededServers = new Map<string, Seeded>()

const seed = Effect.gen(function*() {
  const { url } = yield* TestServer
  const known = seededServers.get(url)
  if (known !== undefined) return known
  const owner = yield* login(url, "Olga")
  const intruder = yield* login(url, "Mallory")
  const notes = yield* createSource(url, owner, "Field notes")
  const diary = yield* createSource(url, owner, "Secret diary of Olga")
  const foreign = yield* createSource(url, intruder, "Mallory private plans")
  const added = yield* ingestText(
    url,
    owner,
    notes,
    "Expedition",
    "Marie Curie discovered polonium in Paris in July 1898. Pierre Curie measured the radium samples."
  )
  yield* waitForDocument(url, owner, notes, added.body.id)
  const hidden = yield* ingestText(url, owner, diary, "Diary", "The zeppelin password is periwinkle.")
  yield* waitForDocument(url, owner, diary, hidden.body.id)
  const theirs = yield* ingestText(url, intruder, foreign, "Plans", "Mallory hides the zeppelin under the bridge.")
  yield* waitForDocument(url, intruder, foreign, theirs.body.id)
  const agent = yield* request(url, "/api/v1/agents", {
    token: owner,
    json: { name: "Historian", source_ids: [notes, diary] }
  })
  assert.strictEqual(agent.status, 201, agent.text)
  const seeded = { url, owner, intruder, notes, diary, foreign, document: added.body.id, agent: agent.body.id }
  seededServers.set(url, seeded)
  return seeded
})

const issueToken = (url: string, owner: string, sourceId: string, name = "laptop") =>
  Effect.map(request(url, `/api/v1/sources/${sourceId}/mcp/tokens`, { token: owner, json: { name } }), (reply) => {
    assert.strictEqual(reply.status, 201, reply.text)
    return reply.body as { id: string; secret: string }
  })

for (const engine of engines) {
  layer(freshServer(engine))(`MCP endpoint (${engine})`, (it) => {
    it.effect("401 without or with a bad token, with a challenge naming the protected resource metadata", () =>
      Effect.gen(function*() {
        const { url } = yield* seed
        for (const token of [undefined, "nonsense", "engram_mcp_unknown"]) {
          const reply = yield* request(url, "/api/v1/mcp/", {
            token,
            json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
            headers: { accept: "application/json, text/event-stream" }
          })
          assert.strictEqual(reply.status, 401)
          const challenge = reply.headers.get("www-authenticate") ?? ""
          const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
          assert.isDefined(metadataUrl, challenge)
          assert.strictEqual(token === undefined, !challenge.includes("invalid_token"))
          const metadata = yield* Effect.promise(() => fetch(metadataUrl!).then((response) => response.json() as any))
          assert.strictEqual(metadata.resource, `${url}/api/v1/mcp/`)
          assert.deepStrictEqual(metadata.bearer_methods_supported, ["header"])
        }
        const root = yield* request(url, "/.well-known/oauth-protected-resource")
        assert.strictEqual(root.status, 200)
        assert.strictEqual(root.body.resource, `${url}/api/v1/mcp/`)
      }))

    it.effect("a browser Origin that is not allowed is refused", () =>
      Effect.gen(function*() {
        const { url, owner } = yield* seed
        const reply = yield* request(url, "/api/v1/mcp/", {
          token: owner,
          json: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } },
          headers: { accept: "application/json, text/event-stream", origin: "https://evil.example" }
        })
        assert.strictEqual(reply.status, 403)
        // The same request without an Origin (a desktop client) opens a 2025-06-18 session.
        const opened = yield* request(url, "/api/v1/mcp/", {
          token: owner,
          json: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } },
          headers: { accept: "application/json, text/event-stream" }
        })
        assert.strictEqual(opened.status, 200, opened.text)
        assert.include(opened.text, '"protocolVersion":"2025-06-18"')
        assert.isString(opened.headers.get("mcp-session-id"))
      }))

    it.effect("2026-07-28 client (2.x): discover, every tool, tool errors, progress during ask", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url, owner, notes, diary, foreign, document, agent } = yield* seed
        const client = yield* modern(url, owner)
        const tools = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(
          tools.tools.map((tool) => tool.name).sort(),
          ["add_memory", "ask", "explore", "get_document", "get_entity", "job_status", "list_agents", "list_sources", "search", "timeline"]
        )
        for (const tool of tools.tools) {
          assert.isAbove(tool.description?.length ?? 0, 40, tool.name)
          assert.strictEqual(tool.inputSchema.type, "object")
        }

        const sources = structured(yield* Effect.promise(() => client.callTool({ name: "list_sources", arguments: {} })))
        assert.deepStrictEqual(sources.sources.map((source: any) => source.id).sort(), [notes, diary].sort())

        const found = structured(yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "Who discovered polonium?", source_ids: [notes] } })
        ))
        assert.isAbove(found.results.length, 0)
        const hit = found.results[0]
        assert.strictEqual(hit.document_id, document)
        assert.strictEqual(hit.title, "Expedition")
        assert.include(hit.quote, "polonium")
        assert.isString(hit.chunk_id)

        const foreignSearch = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "zeppelin", source_ids: [foreign] } })
        )
        assert.include(errorText(foreignSearch), `No source with id ${foreign}`)

        const read = structured(yield* Effect.promise(() =>
          client.callTool({ name: "get_document", arguments: { document_id: document, preview_characters: 20 } })
        ))
        assert.strictEqual(read.document.title, "Expedition")
        assert.strictEqual(read.preview.length, 20)
        assert.isTrue(read.truncated)
        assert.include(
          errorText(yield* Effect.promise(() => client.callTool({ name: "get_document", arguments: { document_id: "nope" } }))),
          "No document with id nope"
        )

        const curie = structured(yield* Effect.promise(() =>
          client.callTool({ name: "get_entity", arguments: { name: "Marie Curie" } })
        ))
        assert.strictEqual(curie.name, "Marie Curie")
        assert.isAbove(curie.events.length, 0)
        const timeline = structured(yield* Effect.promise(() =>
          client.callTool({ name: "timeline", arguments: { entity_id: curie.id, from: "1898-01-01T00:00:00Z", to: "1899-01-01T00:00:00Z" } })
        ))
        assert.isAbove(timeline.events.length, 0)
        assert.isTrue(timeline.events.every((event: any) => event.time.start.startsWith("1898")))

        const around = structured(yield* Effect.promise(() =>
          client.callTool({ name: "explore", arguments: { node_id: `entity:${curie.id}`, limit: 5 } })
        ))
        assert.strictEqual(around.node.id, `entity:${curie.id}`)
        assert.isAbove(around.items.length, 0)
        assert.include(
          errorText(yield* Effect.promise(() => client.callTool({ name: "explore", arguments: { node_id: "entity:nope" } }))),
          "No node with id entity:nope"
        )

        const agents = structured(yield* Effect.promise(() => client.callTool({ name: "list_agents", arguments: {} })))
        assert.deepStrictEqual(agents.agents.map((one: any) => one.id), [agent])
        const progress: Array<number> = []
        const answer = structured(yield* Effect.promise(() =>
          client.callTool(
            { name: "ask", arguments: { agent_id: agent, question: "Who discovered polonium?" } },
            { onprogress: (update: { progress: number }) => progress.push(update.progress) }
          )
        ))
        assert.strictEqual(answer.status, "completed")
        assert.include(answer.answer, "Curie")
        assert.isAbove(answer.citations.length, 0)
        assert.strictEqual(answer.citations[0].document_id, document)
        assert.isAtLeast(progress.length, 2, JSON.stringify(progress))
        assert.deepStrictEqual([...progress].sort((a, b) => a - b), progress)

        // Bad arguments are a protocol error the client reports, not a dropped connection.
        const invalid = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "" } }).then(
            (result) => result.isError === true ? "tool error" : "accepted",
            () => "refused"
          )
        )
        assert.notStrictEqual(invalid, "accepted")
        const after = yield* Effect.promise(() => client.callTool({ name: "list_sources", arguments: {} }))
        assert.isFalse(after.isError ?? false)
      })))

    it.effect("add_memory → job_status → the memory is found by search; writes need allow_writes", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url, owner, notes } = yield* seed
        const client = yield* modern(url, owner)
        const memory = { source_id: notes, title: "Lunch", text: "Ada Lovelace had lunch with Charles Babbage on Tuesday." }
        const refused = yield* Effect.promise(() => client.callTool({ name: "add_memory", arguments: memory }))
        assert.include(errorText(refused), "does not accept writes")

        const put = yield* request(url, `/api/v1/sources/${notes}/mcp`, {
          method: "PUT",
          token: owner,
          json: { enabled: true, tools: ["search", "add_memory", "job_status", "list_sources"], allow_writes: true }
        })
        assert.strictEqual(put.status, 200, put.text)
        const stored = structured(yield* Effect.promise(() => client.callTool({ name: "add_memory", arguments: memory })))
        assert.isString(stored.job_id)
        let status = ""
        for (let i = 0; i < 600 && status !== "succeeded" && status !== "failed"; i++) {
          const job = structured(yield* Effect.promise(() =>
            client.callTool({ name: "job_status", arguments: { job_id: stored.job_id } })
          ))
          status = job.status
          if (status !== "succeeded") yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        }
        assert.strictEqual(status, "succeeded")
        const found = structured(yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "Lovelace Babbage lunch", strategy: "lexical" } })
        ))
        assert.strictEqual(found.results[0].document_id, stored.document_id)
        // The owner's other settings are back to the defaults for the rest of the suite.
        const reset = yield* request(url, `/api/v1/sources/${notes}/mcp`, {
          method: "PUT",
          token: owner,
          json: {
            enabled: true,
            tools: ["search", "list_sources", "list_agents", "get_document", "get_entity", "timeline", "explore", "ask", "add_memory", "job_status"],
            allow_writes: false
          }
        })
        assert.strictEqual(reset.status, 200)
      })))

    it.effect("1.x client (initialize + session): tools/list and tools/call; DELETE ends the session", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url, owner, document } = yield* seed
        const client = yield* legacy(url, owner)
        const tools = yield* Effect.promise(() => client.listTools())
        assert.include(tools.tools.map((tool) => tool.name), "search")
        const found = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "polonium Paris", strategy: "lexical" } })
        )
        assert.strictEqual((found.structuredContent as any).results[0].document_id, document)
        const transport = (client as any)._transport as LegacyTransport
        assert.isString(transport.sessionId)
        yield* Effect.promise(() => transport.terminateSession())
      })))

    it.effect("a source token sees exactly its source, its enabled tools, and stops at once when revoked", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url, owner, intruder, notes, diary, foreign, document, agent } = yield* seed
        const token = yield* issueToken(url, owner, notes)
        assert.match(token.secret, /^engram_mcp_/)
        const client = yield* modern(url, token.secret)
        const listed = structured(yield* Effect.promise(() => client.callTool({ name: "list_sources", arguments: {} })))
        assert.deepStrictEqual(listed.sources.map((source: any) => source.id), [notes])
        const everything = JSON.stringify(listed)
        assert.notInclude(everything, "Secret diary")
        assert.notInclude(everything, "Mallory")
        for (const other of [diary, foreign]) {
          const reply = yield* Effect.promise(() =>
            client.callTool({ name: "search", arguments: { query: "zeppelin", source_ids: [other] } })
          )
          assert.include(errorText(reply), `No source with id ${other}`)
        }
        const all = structured(yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "zeppelin password periwinkle", strategy: "lexical" } })
        ))
        assert.deepStrictEqual(all.results, [])
        // The agent searches both of the owner's sources; through this token it answers from the notes only.
        const answer = structured(yield* Effect.promise(() =>
          client.callTool({ name: "ask", arguments: { agent_id: agent, question: "What is the zeppelin password?" } })
        ))
        assert.notInclude(answer.answer, "periwinkle")
        assert.isTrue(answer.citations.every((citation: any) => citation.source_id === notes))
        const got = structured(yield* Effect.promise(() =>
          client.callTool({ name: "get_document", arguments: { document_id: document } })
        ))
        assert.strictEqual(got.document.id, document)

        // Tokens are listed without their secret; another user cannot see or revoke them.
        const config = yield* request(url, `/api/v1/sources/${notes}/mcp`, { token: owner })
        assert.strictEqual(config.status, 200)
        assert.deepStrictEqual(config.body.tokens.map((one: any) => one.id), [token.id])
        assert.notInclude(config.text, token.secret)
        assert.isString(config.body.tokens[0].last_used_at)
        assert.strictEqual(config.body.endpoint, `${url}/api/v1/mcp/`)
        assert.property(config.body.clients, "claude_desktop")
        assert.strictEqual((yield* request(url, `/api/v1/sources/${notes}/mcp`, { token: intruder })).status, 404)
        assert.strictEqual(
          (yield* request(url, `/api/v1/sources/${notes}/mcp/tokens/${token.id}`, { method: "DELETE", token: intruder })).status,
          404
        )

        // Disabled tools leave tools/list and fail when called.
        const put = yield* request(url, `/api/v1/sources/${notes}/mcp`, {
          method: "PUT",
          token: owner,
          json: { enabled: true, tools: ["search", "list_sources"], allow_writes: false }
        })
        assert.strictEqual(put.status, 200, put.text)
        const fresh = yield* modern(url, token.secret)
        const names = (yield* Effect.promise(() => fresh.listTools())).tools.map((tool) => tool.name).sort()
        assert.deepStrictEqual(names, ["list_sources", "search"])
        const hidden = yield* Effect.promise(() =>
          fresh.callTool({ name: "get_document", arguments: { document_id: document } }).then(
            (result) => result.isError === true ? "error result" : "served",
            () => "refused"
          )
        )
        assert.notStrictEqual(hidden, "served")

        const revoked = yield* request(url, `/api/v1/sources/${notes}/mcp/tokens/${token.id}`, { method: "DELETE", token: owner })
        assert.strictEqual(revoked.status, 204)
        const after = yield* request(url, "/api/v1/mcp/", {
          token: token.secret,
          json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
          headers: { accept: "application/json, text/event-stream" }
        })
        assert.strictEqual(after.status, 401)
        yield* request(url, `/api/v1/sources/${notes}/mcp`, {
          method: "PUT",
          token: owner,
          json: {
            enabled: true,
            tools: ["search", "list_sources", "list_agents", "get_document", "get_entity", "timeline", "explore", "ask", "add_memory", "job_status"],
            allow_writes: false
          }
        })
      })))

    it.effect("configuration: defaults, validation, a disabled source refuses its tokens and leaves the owner's list", () =>
      Effect.gen(function*() {
        const { url, owner, diary } = yield* seed
        const initial = yield* request(url, `/api/v1/sources/${diary}/mcp`, { token: owner })
        assert.strictEqual(initial.status, 200)
        assert.isTrue(initial.body.enabled)
        assert.isFalse(initial.body.allow_writes)
        assert.isNull(initial.body.updated_at)
        assert.strictEqual(initial.body.tools.length, 10)
        const bad = yield* request(url, `/api/v1/sources/${diary}/mcp`, {
          method: "PUT",
          token: owner,
          json: { enabled: true, tools: ["search", "rm_rf"], allow_writes: false }
        })
        assert.strictEqual(bad.status, 422)
        assert.strictEqual((yield* request(url, `/api/v1/sources/${diary}/mcp`, { token: owner })).body.updated_at, null)
        assert.strictEqual(
          (yield* request(url, `/api/v1/sources/nope/mcp/tokens`, { token: owner, json: { name: "x" } })).status,
          404
        )
        const token = yield* issueToken(url, owner, diary, "phone")
        const off = yield* request(url, `/api/v1/sources/${diary}/mcp`, {
          method: "PUT",
          token: owner,
          json: { enabled: false, tools: ["search"], allow_writes: false }
        })
        assert.strictEqual(off.status, 200)
        const refused = yield* request(url, "/api/v1/mcp/", {
          token: token.secret,
          json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
          headers: { accept: "application/json, text/event-stream" }
        })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.body.error.code, "mcp_disabled")
        const client = yield* Effect.scoped(Effect.gen(function*() {
          const ownerClient = yield* modern(url, owner)
          return structured(yield* Effect.promise(() => ownerClient.callTool({ name: "list_sources", arguments: {} })))
        }))
        assert.notInclude(client.sources.map((source: any) => source.id), diary)
        yield* request(url, `/api/v1/sources/${diary}/mcp`, {
          method: "PUT",
          token: owner,
          json: {
            enabled: true,
            tools: ["search", "list_sources", "list_agents", "get_document", "get_entity", "timeline", "explore", "ask", "add_memory", "job_status"],
            allow_writes: false
          }
        })
      }))
  })
}
