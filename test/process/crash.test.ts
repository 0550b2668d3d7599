import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { scratchDatabase, scratchDir } from "../support/server.ts"
import { fixtureModelDir } from "../support/datasets.ts"
import { login, request } from "../support/http.ts"
import { createSource, upload } from "../support/ingest.ts"
import { exitCode, listeningUrl, spawnEngram } from "../support/process.ts"
import { actionTransitions, agreeing, crashAt, crashAtAction, ingestionTransitions } from "../support/crash.ts"

const words = ["river", "engine", "ledger", "orbit", "harvest", "signal", "canvas", "meadow", "quartz", "lantern"]

/** A Markdown document of a few sections, distinct per index so none is a duplicate. */
const documentText = (index: number) =>
  Array.from({ length: 6 }, (_, section) =>
    `## Section ${section} of document ${index}\n\n` +
    Array.from({ length: 40 }, (_, i) => `${words[(index + section + i) % words.length]} number ${i}.`).join(" ")
  ).join("\n\n")

const allDocuments = (url: string, token: string, sourceId: string) =>
  Effect.map(request(url, `/api/v1/sources/${sourceId}/documents?limit=100`, { token }), (reply) =>
    reply.body.items as Array<{ id: string; status: string; chunk_count: number }>)

for (const engine of ["pglite", "postgres"] as const) {
  describe(`crash recovery (${engine})`, () => {
    // Two processes and 30 documents: a minute is not always enough on a loaded 2-core machine.
    it.live("kill -9 mid-ingestion: after a restart every document ends ready, none lost or duplicated", () =>
      Effect.gen(function*() {
        const env = {
          ENGRAM_DATA_DIR: yield* scratchDir,
          ENGRAM_HOST: "127.0.0.1",
          ENGRAM_PORT: "0",
          ENGRAM_JOB_LEASE_SECONDS: "2",
          ENGRAM_CHUNK_TOKENS: "64",
          ENGRAM_EMBED_MODEL_DIR: fixtureModelDir,
          ...(engine === "postgres" ? { DATABASE_URL: (yield* scratchDatabase).url } : {})
        }
        const count = 30
        const first = yield* spawnEngram(env)
        const firstUrl = yield* listeningUrl(first)
        const token = yield* login(firstUrl, "Crashy")
        const sourceId = yield* createSource(firstUrl, token)
        const accepted = yield* upload(
          firstUrl,
          token,
          sourceId,
          Array.from({ length: count }, (_, i) => ({ name: `doc-${i}.md`, bytes: new TextEncoder().encode(documentText(i)) }))
        )
        assert.strictEqual(accepted.status, 202)
        let atKill = yield* allDocuments(firstUrl, token, sourceId)
        while (!atKill.some((d) => d.status === "ready" || d.status === "processing")) {
          atKill = yield* allDocuments(firstUrl, token, sourceId)
        }
        first.child.kill("SIGKILL")
        yield* exitCode(first)
        assert.strictEqual(atKill.length, count)
        assert.isTrue(atKill.some((d) => d.status !== "ready"), "the kill happened mid-ingestion")
        assert.isTrue(atKill.some((d) => d.status !== "queued"), "the workers had started")

        const second = yield* spawnEngram(env)
        const url = yield* listeningUrl(second)
        let documents = yield* allDocuments(url, token, sourceId)
        for (let i = 0; i < 600 && documents.some((d) => d.status !== "ready" && d.status !== "failed"); i++) {
          yield* Effect.sleep("200 millis")
          documents = yield* allDocuments(url, token, sourceId)
        }
        assert.strictEqual(documents.length, count, "no accepted document is lost")
        assert.deepStrictEqual(documents.filter((d) => d.status !== "ready"), [])
        for (const document of documents) {
          const output = yield* request(url, `/api/v1/sources/${sourceId}/documents/${document.id}/parse-output`, { token })
          const ordinals = output.body.chunks.map((c: { ordinal: number }) => c.ordinal)
          assert.deepStrictEqual(ordinals, Array.from({ length: ordinals.length }, (_, i) => i), "no duplicated chunk")
          assert.strictEqual(document.chunk_count, ordinals.length)
        }
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(source.body.document_count, count)
        assert.strictEqual(source.body.chunk_count, documents.reduce((sum, d) => sum + d.chunk_count, 0))
        assert.strictEqual(source.body.status, "ready")
      }).pipe(Effect.scoped), 180_000)
  })
}

for (const engine of ["pglite", "postgres"] as const) {
  describe(`kill -9 at every transition (${engine})`, () => {
    for (const transition of ingestionTransitions) {
      it.live(`killed right after "${transition}" commits: the document becomes ready once and its job succeeds`, () =>
        Effect.gen(function*() {
          const outcome = yield* crashAt(engine, transition)
          assert.isTrue(outcome.killed, "the hook killed the process at the transition")
          assert.strictEqual(outcome.documentStatus, "ready")
          assert.strictEqual(outcome.jobStatus, "succeeded", "the job agrees with its document")
          assert.isTrue(outcome.jobFinished)
          assert.strictEqual(outcome.stuckJobs, 0)
          assert.isAbove(outcome.chunkCount, 0)
          assert.deepStrictEqual(outcome.progress, { done: outcome.chunkCount * 3, total: outcome.chunkCount * 3 })
          assert.isTrue(outcome.chunksExact, "no duplicated or left-over chunk")
          assert.isTrue(outcome.readyOnce, "the document entered the searchable set exactly once")
        }), 120_000)
    }
  })
}

for (const engine of ["pglite", "postgres"] as const) {
  describe(`kill -9 after a user action or a failure (${engine})`, () => {
    for (const [transition, expected] of Object.entries(actionTransitions)) {
      it.live(`killed right after "${transition}" commits: document and job agree, then end ${expected.document}`, () =>
        Effect.gen(function*() {
          const outcome = yield* crashAtAction(engine, transition as keyof typeof actionTransitions)
          assert.isTrue(outcome.killed, "the hook killed the process at the transition")
          assert.include(agreeing[outcome.afterRestart.document] ?? [], outcome.afterRestart.job, "agreeing after the restart")
          assert.strictEqual(outcome.documentStatus, expected.document)
          assert.strictEqual(outcome.jobStatus, expected.job)
          assert.isTrue(outcome.jobFinished)
          assert.strictEqual(outcome.stuckJobs, 0)
          assert.isTrue(outcome.chunksExact, "no duplicated or left-over chunk")
          assert.isTrue(outcome.readyOnce, "BM25 statistics count the document's chunks once (or not at all)")
        }), 120_000)
    }
  })
}
