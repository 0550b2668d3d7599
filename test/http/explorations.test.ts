import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

const ingestReady = (url: string, token: string, sourceId: string, title: string, text: string) =>
  Effect.gen(function*() {
    const reply = yield* ingestText(url, token, sourceId, title, text)
    assert.strictEqual(reply.status, 202, reply.text)
    const document = yield* waitForDocument(url, token, sourceId, reply.body.id)
    assert.strictEqual(document.status, "ready")
    return reply.body.id as string
  })

const explorations = "/api/v1/universe/explorations"

const chunkIds = (hits: ReadonlyArray<{ chunk_id: string }>) => hits.map((hit) => hit.chunk_id).sort()
const documentIds = (hits: ReadonlyArray<{ document_id: string }>) => hits.map((hit) => hit.document_id).sort()

for (const engine of engines) {
  layer(freshServer(engine), { timeout: 120_000 })(`universe explorations (${engine})`, (it) => {
    it.effect("a search saved with save_exploration reads back; replay shows new, erased and vanished hits and nodes", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Aeronaut")
        const source = yield* createSource(url, token, "Airships")
        const first = yield* ingestReady(url, token, source, "eckener",
          "Hugo Eckener flew the zeppelin airship to Lakehurst in 1928.")
        const second = yield* ingestReady(url, token, source, "hindenburg",
          "The Hindenburg was the largest zeppelin airship ever built.")
        yield* ingestReady(url, token, source, "trains", "Steam locomotives pulled freight across the plains.")

        const search = yield* request(url, "/api/v1/search", {
          token,
          json: { query: "zeppelin airship", strategy: "lexical", top_k: 5, save_exploration: true }
        })
        assert.strictEqual(search.status, 200, search.text)
        const id = search.body.exploration_id as string
        assert.isString(id)
        assert.deepStrictEqual(documentIds(search.body.results), [first, second].sort())

        const saved = yield* request(url, `${explorations}/${id}`, { token })
        assert.strictEqual(saved.status, 200, saved.text)
        assert.strictEqual(saved.body.kind, "search")
        assert.strictEqual(saved.body.title, "zeppelin airship", "titled by the query")
        assert.deepStrictEqual([saved.body.strategy, saved.body.top_k, saved.body.hit_count], ["lexical", 5, 2])
        assert.deepStrictEqual(saved.body.source_ids, [source])
        assert.deepStrictEqual(chunkIds(saved.body.results), chunkIds(search.body.results))
        assert.deepStrictEqual(saved.body.window, { from: null, to: null })

        const unchanged = yield* request(url, `${explorations}/${id}/replay`, { token, method: "POST" })
        assert.strictEqual(unchanged.status, 200, unchanged.text)
        assert.deepStrictEqual(
          [unchanged.body.new_hits.length, unchanged.body.vanished_hits.length, unchanged.body.kept_hits],
          [0, 0, 2]
        )

        // A node-based view over the same source: Hugo Eckener appears only in the first document.
        const entities = yield* request(url, `/api/v1/sources/${source}/entities?limit=100`, { token })
        const hugo = entities.body.items.find((e: { name: string }) => e.name === "Hugo Eckener")
        assert.isDefined(hugo, entities.text)
        const view = yield* request(url, explorations, {
          token,
          json: {
            title: "  Eckener  ",
            source_ids: [source],
            seed_node_ids: [`entity:${hugo.id}`, `document:${first}`],
            expanded_node_ids: [`document:${second}`, "community:c-1"],
            filters: { node_kinds: ["entity", "document"], entity_kinds: ["person"] },
            window: { from: "1900-01-01", to: "1950-01-01T00:00:00Z" }
          }
        })
        assert.strictEqual(view.status, 201, view.text)
        assert.strictEqual(view.body.title, "Eckener", "the title is trimmed")
        assert.deepStrictEqual([view.body.kind, view.body.query, view.body.strategy], ["universe", null, null])
        assert.deepStrictEqual(view.body.window, { from: "1900-01-01T00:00:00.000Z", to: "1950-01-01T00:00:00.000Z" })
        assert.deepStrictEqual(view.body.filters, { node_kinds: ["entity", "document"], entity_kinds: ["person"] })
        assert.deepStrictEqual(view.body.results, [])

        // New data arrives and a saved hit's document is deleted.
        const third = yield* ingestReady(url, token, source, "graf", "The Graf Zeppelin airship circled the globe.")
        const removed = yield* request(url, `/api/v1/sources/${source}/documents/${first}`, { token, method: "DELETE" })
        assert.strictEqual(removed.status, 200, removed.text)

        const replay = yield* request(url, `${explorations}/${id}/replay`, { token, method: "POST" })
        assert.strictEqual(replay.status, 200, replay.text)
        assert.deepStrictEqual(documentIds(replay.body.new_hits), [third], "the new matching document is a new hit")
        assert.strictEqual(replay.body.erased_hits, 1, "the deleted document's hit was erased and is counted")
        assert.strictEqual(replay.body.kept_hits, 1)
        assert.deepStrictEqual(replay.body.vanished_hits, [])
        assert.deepStrictEqual(documentIds(replay.body.results), [second, third].sort())
        assert.deepStrictEqual([replay.body.query, replay.body.strategy, replay.body.top_k], ["zeppelin airship", "lexical", 5])
        const after = yield* request(url, `${explorations}/${id}`, { token })
        assert.strictEqual(after.body.erased_hits, 1)
        assert.notInclude(JSON.stringify(after.body), first, "no trace of the deleted document")

        const nodes = yield* request(url, `${explorations}/${view.body.id}/replay`, { token, method: "POST" })
        assert.strictEqual(nodes.status, 200, nodes.text)
        assert.deepStrictEqual(nodes.body.nodes, {
          present: [`document:${second}`],
          vanished: [`entity:${hugo.id}`],
          unchecked: ["community:c-1"]
        })
        assert.deepStrictEqual([nodes.body.results, nodes.body.new_hits, nodes.body.query], [[], [], null])
        const viewAfter = yield* request(url, `${explorations}/${view.body.id}`, { token })
        assert.deepStrictEqual(viewAfter.body.seed_node_ids, [`entity:${hugo.id}`], "the deleted document's node is erased")

        // Reprocessing the second document gives it new chunks: its stored hit is gone, its new chunk is new.
        const reprocess = yield* request(url, `/api/v1/sources/${source}/documents/${second}/reprocess`, {
          token,
          method: "POST"
        })
        assert.strictEqual(reprocess.status, 200, reprocess.text)
        yield* waitForDocument(url, token, source, second, (d) => d.status === "ready" && d.job_id === reprocess.body.job_id)
        const again = yield* request(url, `${explorations}/${id}/replay`, { token, method: "POST" })
        assert.deepStrictEqual(
          again.body.vanished_hits.map((v: { hit: { document_id: string }; reason: string }) => [v.hit.document_id, v.reason]),
          [[second, "gone"]]
        )
        assert.deepStrictEqual(documentIds(again.body.new_hits), [second, third].sort())
      }))

    it.effect("an explicit exploration with a query stores its hits; rename, list, delete; limits are 422", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Cartographer")
        const source = yield* createSource(url, token, "Maps")
        const document = yield* ingestReady(url, token, source, "atlas", "Mercator drew the projection of the globe.")
        const created = yield* request(url, explorations, {
          token,
          json: { title: "Projections", query: "Mercator projection", strategy: "lexical", top_k: 3 }
        })
        assert.strictEqual(created.status, 201, created.text)
        assert.deepStrictEqual(documentIds(created.body.results), [document])
        assert.deepStrictEqual([created.body.top_k, created.body.source_ids], [3, [source]])
        const id = created.body.id as string

        const renamed = yield* request(url, `${explorations}/${id}`, { token, method: "PATCH", json: { title: "Maps" } })
        assert.strictEqual(renamed.status, 200, renamed.text)
        assert.strictEqual(renamed.body.title, "Maps")
        assert.isTrue(renamed.body.updated_at >= created.body.updated_at)
        assert.strictEqual(renamed.body.query, "Mercator projection")

        for (
          const [body, path] of [
            [{ title: "x".repeat(201) }, "body.title"],
            [{ title: "   " }, "body.title"],
            [{ title: "t", window: { from: "2021-01-02", to: "2021-01-01" } }, "body.window.to"],
            [{ title: "t", strategy: "lexical" }, "body.strategy"],
            [{ title: "t", top_k: 51, query: "q" }, "body.top_k"],
            [{ title: "t", seed_node_ids: ["chunk:1"] }, "body.seed_node_ids[0]"],
            [{ title: "t", seed_node_ids: Array.from({ length: 101 }, (_, i) => `entity:${i}`) }, "body.seed_node_ids"],
            [{ title: "t", filters: { node_kinds: ["planet"] } }, "body.filters.node_kinds[0]"],
            [{ title: "t", colour: "red" }, "body.colour"]
          ] as const
        ) {
          const reply = yield* request(url, explorations, { token, json: body })
          assert.strictEqual(reply.status, 422, `${JSON.stringify(body).slice(0, 80)}: ${reply.text}`)
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path)
        }
        const longTitle = yield* request(url, `${explorations}/${id}`, {
          token,
          method: "PATCH",
          json: { title: "y".repeat(201) }
        })
        assert.strictEqual(longTitle.status, 422)

        const more = []
        for (const title of ["one", "two"]) {
          const reply = yield* request(url, explorations, { token, json: { title } })
          assert.strictEqual(reply.status, 201, reply.text)
          more.push(reply.body.id as string)
        }
        const page1 = yield* request(url, `${explorations}?limit=2`, { token })
        assert.strictEqual(page1.status, 200, page1.text)
        assert.deepStrictEqual(page1.body.items.map((e: { id: string }) => e.id), [more[1], more[0]], "newest first")
        assert.notProperty(page1.body.items[0], "results", "the list leaves the hits out")
        const page2 = yield* request(url, `${explorations}?limit=2&cursor=${page1.body.next_cursor}`, { token })
        assert.deepStrictEqual(page2.body.items.map((e: { id: string }) => e.id), [id])
        assert.isNull(page2.body.next_cursor)
        const badCursor = yield* request(url, `${explorations}?cursor=nonsense`, { token })
        assert.strictEqual(badCursor.status, 400)
        assert.strictEqual(badCursor.body.error.code, "invalid_cursor")
        const badLimit = yield* request(url, `${explorations}?limit=101`, { token })
        assert.strictEqual(badLimit.status, 422)

        const deleted = yield* request(url, `${explorations}/${id}`, { token, method: "DELETE" })
        assert.strictEqual(deleted.status, 200, deleted.text)
        assert.deepStrictEqual(deleted.body, { id, deleted: true })
        const gone = yield* request(url, `${explorations}/${id}`, { token })
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.body.error.code, "exploration_not_found")
        const twice = yield* request(url, `${explorations}/${id}`, { token, method: "DELETE" })
        assert.strictEqual(twice.status, 404)
      }))

    it.effect("ownership: another user's exploration, source and nodes are 404 on every route; no token is 401", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const owner = yield* login(url, "Keeper")
        const intruder = yield* login(url, "Prowler")
        const source = yield* createSource(url, owner, "Private")
        const document = yield* ingestReady(url, owner, source, "secret", "Acme Corp acquired Globex in 2021.")
        const created = yield* request(url, explorations, {
          token: owner,
          json: { title: "Mine", seed_node_ids: [`document:${document}`] }
        })
        assert.strictEqual(created.status, 201, created.text)
        const id = created.body.id as string
        const path = `${explorations}/${id}`
        for (
          const attempt of [
            request(url, path, { token: intruder }),
            request(url, path, { token: intruder, method: "PATCH", json: { title: "Theirs" } }),
            request(url, path, { token: intruder, method: "DELETE" }),
            request(url, `${path}/replay`, { token: intruder, method: "POST" })
          ]
        ) {
          const reply = yield* attempt
          assert.strictEqual(reply.status, 404, reply.text)
          assert.strictEqual(reply.body.error.code, "exploration_not_found")
          assert.notInclude(reply.text, "Mine")
        }
        const theirList = yield* request(url, explorations, { token: intruder })
        assert.deepStrictEqual(theirList.body.items, [])
        const foreignSource = yield* request(url, explorations, {
          token: intruder,
          json: { title: "x", source_ids: [source] }
        })
        assert.strictEqual(foreignSource.status, 404)
        assert.strictEqual(foreignSource.body.error.code, "source_not_found")
        const foreignNode = yield* request(url, explorations, {
          token: intruder,
          json: { title: "x", seed_node_ids: [`document:${document}`] }
        })
        assert.strictEqual(foreignNode.status, 404)
        assert.strictEqual(foreignNode.body.error.code, "node_not_found")
        for (
          const [method, route] of [
            ["GET", explorations],
            ["POST", explorations],
            ["GET", path],
            ["PATCH", path],
            ["DELETE", path],
            ["POST", `${path}/replay`]
          ] as const
        ) {
          const reply = yield* request(url, route, { method, ...(method === "POST" || method === "PATCH" ? { json: { title: "x" } } : {}) })
          assert.strictEqual(reply.status, 401, `${method} ${route}`)
        }
        const still = yield* request(url, path, { token: owner })
        assert.strictEqual(still.body.title, "Mine")
      }))

    it.effect("every universe operation is documented with an example of its answer and body", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec = (yield* request(url, "/openapi.json")).body
        const schemaOf = (content: any) => spec.components.schemas[content?.["application/json"]?.schema?.$ref?.split("/").pop()]
        const operations = Object.entries<any>(spec.paths)
          .filter(([path]) => path.startsWith("/api/v1/universe/"))
          .flatMap(([path, methods]) => Object.entries<any>(methods).map(([method, op]) => ({ name: `${method} ${path}`, op })))
        assert.strictEqual(operations.length, 10)
        for (const { name, op } of operations) {
          const success = op.responses["200"] ?? op.responses["201"]
          assert.isArray(schemaOf(success.content)?.examples, `${name} answers with an example`)
          if (op.requestBody !== undefined) assert.isArray(schemaOf(op.requestBody.content)?.examples, `${name} body example`)
        }
      }))

    it.effect("deleting the only source of an exploration deletes it", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Leaver")
        const source = yield* createSource(url, token, "Temporary")
        const kept = yield* createSource(url, token, "Kept")
        yield* ingestReady(url, token, source, "note", "Initech hired Peter Gibbons in 1999.")
        const alone = yield* request(url, explorations, { token, json: { title: "alone", source_ids: [source] } })
        const both = yield* request(url, explorations, { token, json: { title: "both" } })
        assert.deepStrictEqual(both.body.source_ids, [source, kept])
        const removed = yield* request(url, `/api/v1/sources/${source}`, { token, method: "DELETE" })
        assert.strictEqual(removed.status, 200, removed.text)
        const gone = yield* request(url, `${explorations}/${alone.body.id}`, { token })
        assert.strictEqual(gone.status, 404)
        const remaining = yield* request(url, `${explorations}/${both.body.id}`, { token })
        assert.deepStrictEqual(remaining.body.source_ids, [kept])
      }))
  })
}
