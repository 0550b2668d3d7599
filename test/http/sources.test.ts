import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, upload, waitForDocument } from "../support/ingest.ts"

const allowedRoot = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-folder-root-"))

for (const engine of engines) {
  layer(freshServer(engine, { folderRoots: [allowedRoot] }))(`sources (${engine})`, (it) => {
    it.effect("connectors list each kind with a description and its config schema", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Conny")
        const reply = yield* request(url, "/api/v1/sources/connectors", { token })
        assert.strictEqual(reply.status, 200)
        const kinds = reply.body.connectors.map((c: { kind: string }) => c.kind)
        assert.deepStrictEqual(kinds, ["file_upload", "web", "folder"])
        const web = reply.body.connectors[1]
        assert.isString(web.description)
        assert.property(web.config_schema.properties, "urls")
        assert.include(web.config_schema.required, "urls")
      }))

    it.effect("create, get, update and list with exact counts", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Sally")
        const created = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "  Research  ", description: "papers", connector_kind: "file_upload", config: {} }
        })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.name, "Research")
        assert.deepStrictEqual(
          [created.body.document_count, created.body.chunk_count, created.body.event_count, created.body.status],
          [0, 0, 0, "ready"]
        )
        assert.isNull(created.body.last_synced_at)
        const id = created.body.id
        const patched = yield* request(url, `/api/v1/sources/${id}`, {
          method: "PATCH",
          token,
          json: { name: "Papers", description: null }
        })
        assert.strictEqual(patched.status, 200)
        assert.strictEqual(patched.body.name, "Papers")
        assert.isNull(patched.body.description)
        assert.deepStrictEqual((yield* request(url, `/api/v1/sources/${id}`, { token })).body, patched.body)
      }))

    it.effect("lists are paginated newest first with an opaque cursor", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Paige")
        const ids = []
        for (const name of ["one", "two", "three"]) ids.push(yield* createSource(url, token, name))
        const first = yield* request(url, "/api/v1/sources?limit=2", { token })
        assert.deepStrictEqual(first.body.items.map((s: { id: string }) => s.id), [ids[2], ids[1]])
        const second = yield* request(url, `/api/v1/sources?limit=2&cursor=${first.body.next_cursor}`, { token })
        assert.deepStrictEqual(second.body.items.map((s: { id: string }) => s.id), [ids[0]])
        assert.isNull(second.body.next_cursor)
        const bad = yield* request(url, "/api/v1/sources?cursor=garbage", { token })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.body.error.code, "invalid_cursor")
        const tooMany = yield* request(url, "/api/v1/sources?limit=500", { token })
        assert.strictEqual(tooMany.status, 422)
        assert.strictEqual(tooMany.body.error.issues[0].path, "query.limit")
      }))

    it.effect("invalid requests and configs are 422 naming the field", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Val")
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ connector_kind: "file_upload", config: {} }, "body.name"],
          [{ name: "x", config: {} }, "body.connector_kind"],
          [{ name: "x", connector_kind: "ftp", config: {} }, "body.connector_kind"],
          [{ name: "x", connector_kind: "web", config: {} }, "body.config.urls"],
          [{ name: "x", connector_kind: "web", config: { urls: ["ftp://a"] } }, "body.config.urls.0"],
          [{ name: "x", connector_kind: "web", config: { urls: ["https://a.example"], crawl_depth: 9 } }, "body.config.crawl_depth"],
          [{ name: "x", connector_kind: "file_upload", config: { extra: 1 } }, "body.config.extra"],
          [{ name: "x", connector_kind: "folder", config: { path: "/etc" } }, "body.config.path"],
          [{ name: "x", connector_kind: "folder", config: { path: "relative/dir" } }, "body.config.path"],
          [{ name: "x", connector_kind: "folder", config: { path: `${allowedRoot}/../..` } }, "body.config.path"]
        ]
        for (const [json, path] of cases) {
          const reply = yield* request(url, "/api/v1/sources", { token, json })
          assert.strictEqual(reply.status, 422, JSON.stringify(json))
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path, JSON.stringify(json))
        }
        const ok = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "Local docs", connector_kind: "folder", config: { path: allowedRoot } }
        })
        assert.strictEqual(ok.status, 201)
        const web = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "Site", connector_kind: "web", config: { urls: ["https://example.com/"], crawl_depth: 1 } }
        })
        assert.strictEqual(web.status, 201)
      }))

    it.effect("another user's source behaves exactly like a missing one on every route", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const owner = yield* login(url, "Owner")
        const other = yield* login(url, "Intruder")
        const id = yield* createSource(url, owner, "private")
        const routes: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["GET", `/api/v1/sources/${id}`],
          ["PATCH", `/api/v1/sources/${id}`, { name: "mine" }],
          ["DELETE", `/api/v1/sources/${id}`],
          ["POST", `/api/v1/sources/${id}/sync`],
          ["GET", `/api/v1/sources/${id}/chunks`],
          ["GET", `/api/v1/sources/${id}/documents`],
          ["POST", `/api/v1/sources/${id}/documents/ingest`, { title: "t", text: "x" }],
          ["GET", `/api/v1/sources/${id}/documents/whatever`]
        ]
        for (const [method, path, json] of routes) {
          const theirs = yield* request(url, path, { method, token: other, ...(json === undefined ? {} : { json }) })
          const missing = yield* request(url, path.replace(id, "00000000-0000-0000-0000-000000000000"), {
            method,
            token: owner,
            ...(json === undefined ? {} : { json })
          })
          assert.strictEqual(theirs.status, 404, `${method} ${path}`)
          assert.deepStrictEqual(theirs.body.error.code, missing.body.error.code, `${method} ${path}`)
        }
        const listed = yield* request(url, "/api/v1/sources", { token: other })
        assert.notInclude(listed.body.items.map((s: { id: string }) => s.id), id)
        assert.strictEqual((yield* request(url, `/api/v1/sources/${id}`, { token: owner })).status, 200)
      }))

    it.effect("a source whose documents failed says so: status degraded and counts by document status", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Fay")
        const sourceId = yield* createSource(url, token, "mixed")
        const good = yield* ingestText(url, token, sourceId, "good", "The harbour opened in spring.")
        const bad = yield* upload(url, token, sourceId, ["libreoffice-writer-password.pdf"])
        assert.strictEqual(bad.status, 202, bad.text)
        assert.strictEqual((yield* waitForDocument(url, token, sourceId, good.body.id)).status, "ready")
        const failed = yield* waitForDocument(url, token, sourceId, bad.body.documents[0].id)
        assert.strictEqual(failed.status, "failed")
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(source.body.status, "degraded")
        assert.strictEqual(source.body.document_count, 2)
        assert.deepStrictEqual(source.body.documents, { queued: 0, processing: 0, paused: 0, ready: 1, failed: 1 })
        const listed = yield* request(url, "/api/v1/sources", { token })
        assert.deepStrictEqual(listed.body.items[0], source.body)
        const removed = yield* request(url, `/api/v1/sources/${sourceId}/documents/${failed.id}`, { method: "DELETE", token })
        assert.strictEqual(removed.status, 200)
        const after = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(after.body.status, "ready")
        assert.deepStrictEqual(after.body.documents, { queued: 0, processing: 0, paused: 0, ready: 1, failed: 0 })
      }))
  })
}
