import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { sampleFiles } from "../support/datasets.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { waitForDocument } from "../support/ingest.ts"

const waitForJob = (url: string, token: string, jobId: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 600; i++) {
      const job = await (await fetch(`${url}/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${token}` } }))
        .json() as any
      if (["succeeded", "failed", "cancelled"].includes(job.status)) return job
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error("job did not finish")
  })

const sync = (url: string, token: string, sourceId: string) =>
  Effect.gen(function*() {
    const started = yield* request(url, `/api/v1/sources/${sourceId}/sync`, { method: "POST", token })
    assert.strictEqual(started.status, 202, started.text)
    assert.strictEqual(started.body.kind, "sync")
    return yield* waitForJob(url, token, started.body.id)
  })

const documentsOf = (url: string, token: string, sourceId: string) =>
  Effect.gen(function*() {
    const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents?limit=100`, { token })
    for (const document of listed.body.items) yield* waitForDocument(url, token, sourceId, document.id)
    const settled = yield* request(url, `/api/v1/sources/${sourceId}/documents?limit=100`, { token })
    return new Map<string, any>(settled.body.items.map((d: { title: string }) => [d.title, d]))
  })

/** A small site on loopback: pages link to each other, one is missing, one is off-site. */
const site = Effect.acquireRelease(
  Effect.promise(async () => {
    const pages = new Map<string, { type: string; body: string | Buffer; lastModified?: string }>()
    const server = createServer((req, res) => {
      const page = pages.get(req.url ?? "")
      if (page === undefined) return void res.writeHead(404).end("nope")
      res.writeHead(200, {
        "content-type": page.type,
        ...(page.lastModified === undefined ? {} : { "last-modified": page.lastModified })
      }).end(page.body)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return { server, base, pages }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const html = (title: string, body: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav>Menu</nav><main><h1>${title}</h1>${body}</main></body></html>`

const folderRoot = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-sync-root-"))

for (const engine of engines) {
  layer(freshServer(engine, { folderRoots: [folderRoot] }))(`connector sync (${engine})`, (it) => {
    it.effect("folder: new files are ingested, unchanged skipped, changed reprocessed, vanished removed", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Folder Fan")
        const dir = Fs.mkdtempSync(Path.join(folderRoot, `${engine}-`))
        Fs.mkdirSync(Path.join(dir, "sub"))
        Fs.writeFileSync(Path.join(dir, "a.md"), "# Alpha\n\nThe first note.")
        Fs.writeFileSync(Path.join(dir, "sub", "b.txt"), "The second note.")
        Fs.utimesSync(Path.join(dir, "sub", "b.txt"), new Date("2023-04-05T06:07:08Z"), new Date("2023-04-05T06:07:08Z"))
        Fs.copyFileSync(Path.join(sampleFiles, "google-doc-document.pdf"), Path.join(dir, "zen.pdf"))
        Fs.writeFileSync(Path.join(dir, "image.png"), Buffer.from([137, 80, 78, 71]))
        Fs.symlinkSync("/etc/hostname", Path.join(dir, "escape.txt"))
        const created = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "Notes folder", connector_kind: "folder", config: { path: dir } }
        })
        const sourceId = created.body.id

        const first = yield* sync(url, token, sourceId)
        assert.strictEqual(first.status, "succeeded")
        assert.deepStrictEqual(
          { ...first.result, skipped: first.result.skipped.map((s: { key: string }) => s.key) },
          { added: 3, updated: 0, unchanged: 0, duplicates: 0, removed: 0, skipped: ["escape.txt", "image.png"] }
        )
        const before = yield* documentsOf(url, token, sourceId)
        assert.deepStrictEqual([...before.keys()].sort(), ["a.md", "sub/b.txt", "zen.pdf"])
        assert.isTrue([...before.values()].every((d) => d.status === "ready"))
        assert.strictEqual(before.get("sub/b.txt").date, "2023-04-05T06:07:08.000Z", "a file's date is its modification time")

        const second = yield* sync(url, token, sourceId)
        assert.deepStrictEqual([second.result.added, second.result.unchanged, second.result.updated], [0, 3, 0])

        Fs.writeFileSync(Path.join(dir, "a.md"), "# Alpha\n\nThe first note, revised.")
        Fs.rmSync(Path.join(dir, "sub", "b.txt"))
        Fs.writeFileSync(Path.join(dir, "c.md"), "A third note.")
        const third = yield* sync(url, token, sourceId)
        assert.deepStrictEqual(
          [third.result.added, third.result.updated, third.result.unchanged, third.result.removed],
          [1, 1, 1, 1]
        )
        const after = yield* documentsOf(url, token, sourceId)
        assert.deepStrictEqual([...after.keys()].sort(), ["a.md", "c.md", "zen.pdf"])
        assert.strictEqual(after.get("a.md").id, before.get("a.md").id, "a changed file keeps its document")
        const output = yield* request(url, `/api/v1/sources/${sourceId}/documents/${after.get("a.md").id}/preview`, { token })
        assert.include(output.body.text, "revised")
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(source.body.document_count, 3)
        assert.isString(source.body.last_synced_at)
      }))

    it.effect("web: pages and same-site links are fetched with their main text; changes and removals follow", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { base, pages } = yield* site
        pages.set("/", {
          type: "text/html; charset=utf-8",
          body: html("Home", `<p>Welcome to the duck pond.</p><a href="/a">A</a> <a href="b">B</a>
            <a href="/missing">gone</a> <a href="http://other.invalid/x">elsewhere</a> <a href="/a#top">A again</a>`)
        })
        pages.set("/a", {
          type: "text/html",
          body: html("Page A", "<p>Mallards dabble for food.</p>")
            .replace("</head>", `<meta property="article:published_time" content="2022-03-04T05:06:07Z"></head>`),
          lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"
        })
        pages.set("/b", { type: "text/plain", body: "Plain text page about teal.", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT" })
        const token = yield* login(url, "Web Fan")
        const created = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "Site", connector_kind: "web", config: { urls: [`${base}/`], crawl_depth: 1 } }
        })
        const sourceId = created.body.id
        const first = yield* sync(url, token, sourceId)
        assert.strictEqual(first.status, "succeeded", JSON.stringify(first.error))
        assert.strictEqual(first.result.added, 3)
        assert.deepStrictEqual(first.result.skipped, [{ key: `${base}/missing`, reason: "answered HTTP 404" }])
        const documents = yield* documentsOf(url, token, sourceId)
        assert.deepStrictEqual([...documents.keys()].sort(), ["Home", "Page A", `${base}/b`])
        assert.strictEqual(documents.get("Page A").date, "2022-03-04T05:06:07.000Z", "a page's published time first")
        assert.strictEqual(documents.get(`${base}/b`).date, "2015-10-21T07:28:00.000Z", "then its Last-Modified")
        assert.isNull(documents.get("Home").date, "a page without either is undated")
        const home = yield* request(url, `/api/v1/sources/${sourceId}/documents/${documents.get("Home").id}/preview`, { token })
        assert.include(home.body.text, "Welcome to the duck pond.")
        assert.notInclude(home.body.text, "Menu")

        pages.set("/a", { type: "text/html", body: html("Page A", "<p>Mallards dabble and upend.</p>") })
        pages.set("/", { type: "text/html", body: html("Home", `<p>Welcome to the duck pond.</p><a href="/a">A</a>`) })
        const second = yield* sync(url, token, sourceId)
        assert.deepStrictEqual(
          [second.result.added, second.result.updated, second.result.unchanged, second.result.removed],
          [0, 2, 0, 1]
        )
        const after = yield* documentsOf(url, token, sourceId)
        assert.deepStrictEqual([...after.keys()].sort(), ["Home", "Page A"])
      }).pipe(Effect.scoped))
  })

  layer(freshServer(engine, { webAllowPrivate: false }))(`web sync guards (${engine})`, (it) => {
    it.effect("private and loopback addresses are not fetched unless the operator allows them", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { base, pages } = yield* site
        pages.set("/", { type: "text/html", body: html("Internal", "<p>secret</p>") })
        const token = yield* login(url, "Guarded")
        const created = yield* request(url, "/api/v1/sources", {
          token,
          json: { name: "Internal", connector_kind: "web", config: { urls: [`${base}/`] } }
        })
        const job = yield* sync(url, token, created.body.id)
        assert.strictEqual(job.status, "succeeded")
        assert.strictEqual(job.result.added, 0)
        assert.match(job.result.skipped[0].reason, /private or local network/)
      }).pipe(Effect.scoped))
  })
}
