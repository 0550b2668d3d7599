import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, upload, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/** Prose the rule extractor has work in (names, places, dates), `size` characters or a little more. */
const prose = (size: number, last: string) => {
  const paragraphs: Array<string> = []
  let length = 0
  for (let i = 0; length < size; i++) {
    const heading = i % 40 === 0 ? `## Meetings from ${i}\n\n` : ""
    const paragraph = `${heading}On March ${1 + (i % 28)}, 2021, Maria Lopez met Tom Becker of Acme Corp in Lisbon ` +
      `to discuss the Globex acquisition, item ${i}. Becker said that Acme would open an office in Berlin next year.`
    paragraphs.push(paragraph)
    length += paragraph.length + 2
  }
  paragraphs.push(`## Closing\n\nThe minutes end with the word ${last}.`)
  return paragraphs.join("\n\n")
}

/**
 * Short notes, one paragraph each: their parse (text plus blocks JSON) is over four times the upload, so a 4 MiB
 * file reads back as one 17 MiB message, past the SQL driver's default limit of 16 MiB.
 */
const notes = (size: number, last: string) => {
  const parts: Array<string> = []
  let length = 0
  for (let i = 0; length < size; i++) {
    const line = `${i % 200 === 0 ? `## Notes from ${i}\n\n` : ""}Maria met Tom in Lisbon, note ${i}.`
    parts.push(line)
    length += line.length + 2
  }
  parts.push(`The notes end with the word ${last}.`)
  return parts.join("\n\n")
}

const lexicalHits = (url: string, token: string, query: string) =>
  Effect.map(
    request(url, "/api/v1/search", { token, json: { query, strategy: "lexical" } }),
    (reply) => reply.body.results.map((result: { document_id: string }) => result.document_id) as Array<string>
  )

/** Polls the job until it succeeds, fails, or records an error (a retry pending), at most 150 s. */
const settledJob = (url: string, token: string, jobId: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 150_000
    while (Date.now() < deadline) {
      const response = await fetch(`${url}/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${token}` } })
      const job = await response.json() as any
      if (job.status === "succeeded" || job.status === "failed" || job.error !== null) return job
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    throw new Error(`job ${jobId} did not settle`)
  })

/** Term rows whose document frequency differs from a recount of the searchable chunks, and the chunk count kept. */
const statisticsDrift = (sourceId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const [drift] = yield* sql<{ n: number }>`
      WITH truth AS (
        SELECT u.lexeme AS term, count(*)::int AS df
        FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version AND d.status = 'ready'
        CROSS JOIN LATERAL unnest(to_tsvector('english', c.text)) u
        WHERE c.source_id = ${sourceId}
        GROUP BY u.lexeme
      )
      SELECT count(*)::int AS n FROM truth
      FULL JOIN (SELECT term, df FROM lexical_terms WHERE source_id = ${sourceId} AND df <> 0) kept USING (term)
      WHERE truth.df IS DISTINCT FROM kept.df`
    const [stats] = yield* sql<{ chunk_count: number }>`
      SELECT coalesce(sum(chunk_count), 0)::int AS chunk_count FROM lexical_stats WHERE source_id = ${sourceId}`
    return { terms: drift!.n, chunks: stats!.chunk_count }
  })

const uploadLimit = 4 * 1024 * 1024

for (const engine of engines) {
  layer(freshServer(engine, {
    maxUploadBytes: uploadLimit,
    extractMaxChars: 4000,
    chunkTokens: 2048,
    chunkOverlapTokens: 0
  }), { timeout: 180_000 })(`budgets (${engine})`, (it) => {
    it.effect("a document longer than the extraction budget is ready, searchable in full, and its job records where extraction stopped", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Budget")
        const sourceId = yield* createSource(url, token)
        const text = prose(40_000, "zanzibarquux")
        const accepted = yield* ingestText(url, token, sourceId, "Minutes", text)
        assert.strictEqual(accepted.status, 202, accepted.text)
        const ready = yield* waitForDocument(url, token, sourceId, accepted.body.id)
        assert.strictEqual(ready.status, "ready")
        // The end of the text, far past the extraction budget, is searchable.
        assert.include(yield* lexicalHits(url, token, "zanzibarquux"), ready.id)
        const job = yield* request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token })
        assert.strictEqual(job.body.status, "succeeded")
        const extraction = job.body.result.extraction
        assert.strictEqual(extraction.complete, false)
        assert.strictEqual(extraction.reason, "char_limit")
        assert.isAtMost(extraction.chars_read, 4000)
        assert.isAbove(extraction.chars_read, 0)
        assert.isAbove(extraction.chars_total, 30_000)
        // What was read still yields entities.
        const entities = yield* request(url, `/api/v1/sources/${sourceId}/entities`, { token })
        assert.isAbove(entities.body.items?.length ?? 0, 0, entities.text)
      }))

    it.effect("an upload just under ENGRAM_MAX_UPLOAD_BYTES is processed to ready; one over it is refused with 413 stating the limit", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Bulk")
        const sourceId = yield* createSource(url, token, "Bulk")
        const near = new TextEncoder().encode(notes(uploadLimit - 64 * 1024, "omegaterminus"))
        const accepted = yield* upload(url, token, sourceId, [{ name: "minutes.md", bytes: near }])
        assert.strictEqual(accepted.status, 202, accepted.text)
        const document = accepted.body.documents[0]
        const job = yield* settledJob(url, token, document.job_id)
        assert.isNull(job.error, JSON.stringify(job.error))
        assert.strictEqual(job.status, "succeeded")
        const ready = yield* waitForDocument(url, token, sourceId, document.id)
        assert.strictEqual(ready.status, "ready")
        assert.include(yield* lexicalHits(url, token, "omegaterminus"), ready.id)
        // BM25 statistics, summed over many batches of chunks, equal a recount; deleting takes them back to zero.
        assert.isAbove(ready.chunk_count, 50)
        assert.deepStrictEqual(yield* statisticsDrift(sourceId), { terms: 0, chunks: ready.chunk_count })
        yield* request(url, `/api/v1/sources/${sourceId}/documents/${ready.id}`, { method: "DELETE", token })
        assert.deepStrictEqual(yield* statisticsDrift(sourceId), { terms: 0, chunks: 0 })

        const over = new Uint8Array(uploadLimit + 1).fill(0x61)
        const refused = yield* upload(url, token, sourceId, [{ name: "over.txt", bytes: over }])
        assert.strictEqual(refused.status, 413)
        assert.include(refused.body.error.message, String(uploadLimit))
      }), { timeout: 180_000 })
  })
}

layer(freshServer("pglite", { extractTimeoutSeconds: 1, extractMaxChars: 10_000_000 }), { timeout: 120_000 })(
  "extraction time limit",
  (it) => {
    it.effect("rule extraction stops at ENGRAM_EXTRACT_TIMEOUT_SECONDS; the document is ready and the job says why", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Slow")
        const sourceId = yield* createSource(url, token)
        const accepted = yield* upload(url, token, sourceId, [
          { name: "minutes.md", bytes: new TextEncoder().encode(prose(300_000, "quokkafinale")) }
        ])
        assert.strictEqual(accepted.status, 202, accepted.text)
        const ready = yield* waitForDocument(url, token, sourceId, accepted.body.documents[0].id)
        assert.strictEqual(ready.status, "ready")
        assert.include(yield* lexicalHits(url, token, "quokkafinale"), ready.id)
        const job = yield* request(url, `/api/v1/jobs/${ready.job_id}`, { token })
        const extraction = job.body.result.extraction
        assert.strictEqual(extraction.complete, false)
        assert.strictEqual(extraction.reason, "time_limit")
        assert.isBelow(extraction.chars_read, extraction.chars_total)
      }))
  }
)
