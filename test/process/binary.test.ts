import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fixtureModelDir } from "../support/datasets.ts"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, ingestText, upload, waitForDocument } from "../support/ingest.ts"
import { exitCode, listeningUrl, spawnProcess } from "../support/process.ts"
import { scratchDir } from "../support/server.ts"

const root = Path.resolve(import.meta.dirname, "../..")

/** `npm run build:binary` (its script, on the `node` devDependency): resolves with dist/engram, fails with the build's output. */
const buildBinary = Effect.promise(() =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(Path.join(root, "node_modules/.bin/node"), ["scripts/build-binary.ts"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("exit", (code) =>
      code === 0 ? resolve(Path.join(root, "dist/engram")) : reject(new Error(`the build failed (${code}): ${output}`)))
  })
)

const text = "In 2021, Acme Corporation opened a lighthouse in Texas, whose keeper logged the aurora over the reef."

/** A user registered with a password (argon2), a source, one text ingested until ready, and a search that finds it. */
const ingestAndSearch = (url: string) =>
  Effect.gen(function*() {
    const registered = yield* request(url, "/api/v1/auth/register", {
      json: { name: "Keeper", password: "a long enough password" }
    })
    assert.strictEqual(registered.status, 201, registered.text)
    const token = yield* login(url, "Keeper", "a long enough password")
    const sourceId = yield* createSource(url, token)
    const accepted = yield* ingestText(url, token, sourceId, "logbook", text)
    assert.strictEqual(accepted.status, 202, accepted.text)
    const document = yield* waitForDocument(url, token, sourceId, accepted.body.id)
    assert.strictEqual(document.status, "ready", JSON.stringify(document))
    return { token, sourceId, documentId: accepted.body.id as string }
  })

const hits = (url: string, token: string, strategy: string) =>
  Effect.map(
    request(url, "/api/v1/search", { token, json: { query: "aurora over the reef", strategy } }),
    (reply) => {
      assert.strictEqual(reply.status, 200, reply.text)
      return reply.body.results.map((result: { document_id: string }) => result.document_id) as Array<string>
    }
  )

// Building takes a minute or two on a loaded machine, each start-up up to a minute: bounds, not timings.
describe("the single binary", { timeout: 900_000 }, () => {
  it.live("copied alone into an empty directory, it starts, ingests a text, a PDF and a Word file, finds the text, stops with 0, and starts again", () =>
    Effect.gen(function*() {
      const built = yield* buildBinary
      const dir = yield* scratchDir
      const executable = Path.join(dir, "engram")
      Fs.copyFileSync(built, executable)
      Fs.chmodSync(executable, 0o755)
      assert.deepStrictEqual(Fs.readdirSync(dir), ["engram"])

      // Nothing from the repository or the system: only the binary on the PATH, no NODE_PATH, the data directory
      // the default ./data.
      const start = spawnProcess(executable, [], dir, {
        PATH: dir,
        HOME: dir,
        ENGRAM_PORT: "0",
        // The fixture model (outside the repository) keeps the process offline and runs onnxruntime's addon.
        ENGRAM_EMBED_MODEL_DIR: fixtureModelDir,
        ENGRAM_ALLOW_REGISTRATION: "true"
      })

      const first = yield* Effect.scoped(Effect.gen(function*() {
        const engram = yield* start
        const url = yield* listeningUrl(engram)
        const ready = yield* waitUntilReady(url)
        assert.strictEqual(ready.status, "ready")
        const { token, sourceId, documentId } = yield* ingestAndSearch(url)
        assert.include(yield* hits(url, token, "lexical"), documentId)
        assert.include(yield* hits(url, token, "vector"), documentId, "embedded by onnxruntime, found by pgvector")
        // The rule extractor ran on a worker thread unpacked from the binary.
        const entities = yield* request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token })
        assert.include(entities.body.items.map((entity: { name: string }) => entity.name), "Acme Corporation")
        // PDF and Word parsers (bundled into that worker) read the shared samples.
        const files = yield* upload(url, token, sourceId, ["multi_page.pdf", "word_sample.docx"])
        assert.strictEqual(files.status, 202, files.text)
        for (const { id } of files.body.documents as Array<{ id: string }>) {
          const parsed = yield* waitForDocument(url, token, sourceId, id)
          assert.strictEqual(parsed.status, "ready", JSON.stringify(parsed))
        }
        engram.child.kill("SIGTERM")
        assert.strictEqual(yield* exitCode(engram), 0, engram.output())
        return documentId
      }))

      const runtimes = Fs.readdirSync(Path.join(dir, "data", ".runtime"))
      assert.strictEqual(runtimes.length, 1, "one unpacked runtime directory in the data directory")

      // The second start reuses the unpacked files and finds the data of the first.
      yield* Effect.scoped(Effect.gen(function*() {
        const engram = yield* start
        const url = yield* listeningUrl(engram)
        yield* waitUntilReady(url)
        const token = yield* login(url, "Keeper", "a long enough password")
        assert.include(yield* hits(url, token, "lexical"), first)
        engram.child.kill("SIGTERM")
        assert.strictEqual(yield* exitCode(engram), 0, engram.output())
      }))
      assert.deepStrictEqual(Fs.readdirSync(Path.join(dir, "data", ".runtime")), runtimes)
    }))
})
