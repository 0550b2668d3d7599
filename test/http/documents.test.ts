import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, upload, waitForDocument } from "../support/ingest.ts"

const sampleUploads = [
  "google-doc-document.pdf",
  "multicolumn.pdf",
  "multi_page.pdf",
  "word_sample.docx",
  "unit_test_headers_numbered.docx",
  "wiki_duck.html",
  "wiki.md",
  "mixed.md"
]

const vectorCount = (documentId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const [model] = yield* sql<{ table_name: string }>`SELECT table_name FROM embedding_models WHERE status = 'active'`
    const [row] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql(model!.table_name)} v JOIN chunks c ON c.id = v.chunk_id
      WHERE c.document_id = ${documentId}`
    return row!.n
  })

for (const engine of engines) {
  layer(freshServer(engine))(`documents (${engine})`, (it) => {
    it.effect("text is accepted (202), processed to ready, chunked, embedded and counted", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Tex")
        const sourceId = yield* createSource(url, token)
        const accepted = yield* ingestText(url, token, sourceId, "Notes", "# Plan\n\nShip it on Friday.\n\n## Risks\n\nNone.")
        assert.strictEqual(accepted.status, 202)
        assert.strictEqual(accepted.body.status, "queued")
        assert.strictEqual(accepted.body.duplicate, false)
        assert.isString(accepted.body.job_id)
        const ready = yield* waitForDocument(url, token, sourceId, accepted.body.id)
        assert.strictEqual(ready.status, "ready")
        assert.isNull(ready.stage)
        assert.isTrue(ready.searchable)
        assert.strictEqual(ready.chunk_count, 2)
        assert.strictEqual(yield* vectorCount(ready.id), 2)
        const chunks = yield* request(url, `/api/v1/sources/${sourceId}/chunks`, { token })
        assert.deepStrictEqual(chunks.body.items.map((c: { section_path: Array<string> }) => c.section_path), [
          ["Plan"],
          ["Plan", "Risks"]
        ])
        assert.deepStrictEqual(chunks.body.items.map((c: { text: string }) => c.text), [
          "Plan\n\nShip it on Friday.",
          "Risks\n\nNone."
        ])
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.deepStrictEqual([source.body.document_count, source.body.chunk_count], [1, 2])
        const job = yield* request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token })
        assert.strictEqual(job.body.status, "succeeded")
        assert.strictEqual(job.body.kind, "ingest")
        assert.strictEqual(job.body.document_id, accepted.body.id)
        assert.strictEqual(job.body.attempts, 0, "attempts count failures; this job had none")
        assert.isAbove(job.body.progress.total, 0)
        assert.strictEqual(job.body.progress.done, job.body.progress.total, "a succeeded job's progress is complete")
        assert.isNull(job.body.stage)
        assert.isString(job.body.finished_at)
      }))

    it.effect("a conversation is chunked by turns with speaker and time", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Chatty")
        const sourceId = yield* createSource(url, token)
        const reply = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
          token,
          json: {
            title: "standup",
            messages: [
              { speaker: "Alice", content: "I merged the parser.", timestamp: "2024-05-02T09:00:00Z" },
              { speaker: "Bob", content: "Reviewing the chunker today.", timestamp: "2024-05-02T09:01:00+02:00" },
              { role: "assistant", content: "Summary noted." }
            ]
          }
        })
        assert.strictEqual(reply.status, 202)
        assert.strictEqual(reply.body.kind, "messages")
        yield* waitForDocument(url, token, sourceId, reply.body.id)
        const output = yield* request(url, `/api/v1/sources/${sourceId}/documents/${reply.body.id}/parse-output`, { token })
        assert.deepStrictEqual(output.body.blocks.map((b: { speaker: string }) => b.speaker), ["Alice", "Bob", "assistant"])
        assert.strictEqual(output.body.blocks[1].timestamp, "2024-05-02T07:01:00.000Z")
        // The chunk's time span runs from its earliest message (Bob's, sent at 07:01 UTC) to its latest.
        assert.strictEqual(output.body.chunks[0].spoken_at, "2024-05-02T07:01:00.000Z")
        assert.strictEqual(output.body.chunks[0].spoken_until, "2024-05-02T09:00:00.000Z")
        assert.deepStrictEqual(
          output.body.chunks[0].messages.map((m: { speaker: string; spoken_at: string }) => [m.speaker, m.spoken_at]),
          [["Alice", "2024-05-02T09:00:00.000Z"], ["Bob", "2024-05-02T07:01:00.000Z"], ["assistant", "2024-05-02T07:01:00.000Z"]]
        )
        assert.include(output.body.chunks[0].text, "Alice: I merged the parser.")
      }))

    it.effect("exactly one of text or messages, and valid messages, or 422", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Strict")
        const sourceId = yield* createSource(url, token)
        const path = `/api/v1/sources/${sourceId}/documents/ingest`
        for (const json of [
          { title: "t" },
          { title: "t", text: "a", messages: [{ content: "b" }] },
          { title: "t", messages: [] },
          { title: "t", messages: [{ speaker: "A" }] },
          { title: "t", messages: [{ content: "x", timestamp: "yesterday" }] },
          // Days a month lacks (JavaScript reads 30 February as 2 March), hour 24, instants PostgreSQL cannot hold.
          { title: "t", messages: [{ content: "x", timestamp: "2023-02-30T10:00:00Z" }] },
          { title: "t", messages: [{ content: "x", timestamp: "2023-05-01T24:00:00Z" }] },
          { title: "t", messages: [{ content: "x", timestamp: "0000-01-01T00:00:00Z" }] },
          { title: "t", messages: [{ content: "x", timestamp: "9999-12-31T23:59:59-12:00" }] },
          { title: "t", text: "a", date: "2023-04-31" },
          // A speaker is a name on one line: a line break would read as another speaker's line.
          { title: "t", messages: [{ speaker: "Mallory\nAlice", content: "x" }] },
          { title: "t", messages: [{ speaker: "   ", content: "x" }] },
          { title: "t", messages: [{ speaker: "A\u0007B", content: "x" }] },
          { title: "", text: "a" }
        ]) {
          const reply = yield* request(url, path, { token, json })
          assert.strictEqual(reply.status, 422, JSON.stringify(json))
        }
        const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents`, { token })
        assert.strictEqual(listed.body.items.length, 0)
      }))

    it.effect("the same content twice in a source returns the existing document marked duplicate (200)", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Dupe")
        const sourceId = yield* createSource(url, token)
        const first = yield* ingestText(url, token, sourceId, "a", "Same words.")
        const second = yield* ingestText(url, token, sourceId, "b", "Same words.")
        assert.strictEqual(second.status, 200)
        assert.isTrue(second.body.duplicate)
        assert.strictEqual(second.body.id, first.body.id)
        assert.strictEqual(second.body.title, "a")
        const otherSource = yield* createSource(url, token, "other")
        assert.strictEqual((yield* ingestText(url, token, otherSource, "c", "Same words.")).status, 202)
        const again = yield* upload(url, token, sourceId, [{ name: "same.txt", bytes: new TextEncoder().encode("Same words.") }])
        assert.strictEqual(again.body.documents[0].id, first.body.id)
        assert.isTrue(again.body.documents[0].duplicate)
        const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents`, { token })
        assert.strictEqual(listed.body.items.length, 1)
      }))

    it.effect("every sample file type uploads and parses; an encrypted PDF fails with its reason", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Uploader")
        const sourceId = yield* createSource(url, token)
        const reply = yield* upload(url, token, sourceId, [...sampleUploads, "libreoffice-writer-password.pdf"])
        assert.strictEqual(reply.status, 202, reply.text)
        assert.strictEqual(reply.body.documents.length, sampleUploads.length + 1)
        for (const document of reply.body.documents) {
          const done = yield* waitForDocument(url, token, sourceId, document.id)
          if (document.title === "libreoffice-writer-password.pdf") {
            assert.strictEqual(done.status, "failed")
            assert.deepStrictEqual(done.error, {
              code: "pdf_encrypted",
              message: "The PDF is password-protected; upload an unprotected copy",
              stage: "parse"
            })
            const job = yield* request(url, `/api/v1/jobs/${done.job_id}`, { token })
            assert.strictEqual(job.body.status, "failed")
            assert.strictEqual(job.body.attempts, 1, "a permanent failure is not retried")
          } else {
            assert.strictEqual(done.status, "ready", `${document.title}: ${JSON.stringify(done.error)}`)
            assert.isAbove(done.chunk_count, 0, document.title)
          }
        }
        const mimes = reply.body.documents.map((d: { mime_type: string }) => d.mime_type)
        assert.include(mimes, "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        assert.include(mimes, "text/html")
        const preview = yield* request(
          url,
          `/api/v1/sources/${sourceId}/documents/${reply.body.documents[6].id}/preview`,
          { token }
        )
        assert.match(preview.body.text, /^IBM/)
        assert.strictEqual(preview.body.parser, "markdown")
        const output = yield* request(
          url,
          `/api/v1/sources/${sourceId}/documents/${reply.body.documents[2].id}/parse-output`,
          { token }
        )
        for (const block of output.body.blocks) {
          assert.strictEqual(output.body.text.slice(block.start, block.end), block.text)
        }
        for (const chunk of output.body.chunks) {
          assert.strictEqual(output.body.text.slice(chunk.char_start, chunk.char_end), chunk.text)
        }
      }))

    it.effect("json and csv files are records; unsupported or mismatched files are 415 and nothing is stored", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Types")
        const sourceId = yield* createSource(url, token)
        const encode = (text: string) => new TextEncoder().encode(text)
        const ok = yield* upload(url, token, sourceId, [
          { name: "people.json", bytes: encode(JSON.stringify([{ name: "Ada" }, { name: "Alan" }])) },
          { name: "people.csv", bytes: encode("name,role\nAda,programmer\n") }
        ])
        assert.strictEqual(ok.status, 202)
        for (const document of ok.body.documents) {
          assert.strictEqual((yield* waitForDocument(url, token, sourceId, document.id)).status, "ready")
        }
        for (const files of [
          [{ name: "fake.pdf", bytes: encode("not a pdf") }],
          [{ name: "photo.png", bytes: new Uint8Array([137, 80, 78, 71]) }],
          [{ name: "fine.txt", bytes: encode("fine") }, { name: "evil.docx", bytes: encode("text") }]
        ]) {
          const reply = yield* upload(url, token, sourceId, files)
          assert.strictEqual(reply.status, 415, files.map((f) => f.name).join())
          assert.strictEqual(reply.body.error.code, "unsupported_file_type")
        }
        const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents`, { token })
        assert.strictEqual(listed.body.items.length, 2, "nothing from a rejected upload is stored")
        const none = yield* Effect.promise(() =>
          fetch(`${url}/api/v1/sources/${sourceId}/documents/upload`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}` },
            body: new FormData()
          })
        )
        assert.strictEqual(none.status, 422)
      }))

    it.effect("uploads over the limit are 413 and nothing is stored", () =>
      Effect.gen(function*() {
        const { url, settings } = yield* TestServer
        const token = yield* login(url, "Big")
        const sourceId = yield* createSource(url, token)
        const big = new Uint8Array(settings.maxUploadBytes + 1).fill(97)
        const reply = yield* upload(url, token, sourceId, [{ name: "big.txt", bytes: big }])
        assert.strictEqual(reply.status, 413)
        assert.strictEqual(reply.body.error.code, "payload_too_large")
        const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents`, { token })
        assert.strictEqual(listed.body.items.length, 0)
      }))

    it.effect("delete removes the document, its chunks and vectors, and the counts", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Deleter")
        const sourceId = yield* createSource(url, token)
        const keep = yield* ingestText(url, token, sourceId, "keep", "Kept text.")
        const drop = yield* ingestText(url, token, sourceId, "drop", "# A\n\nOne.\n\n# B\n\nTwo.")
        yield* waitForDocument(url, token, sourceId, keep.body.id)
        yield* waitForDocument(url, token, sourceId, drop.body.id)
        const removed = yield* request(url, `/api/v1/sources/${sourceId}/documents/${drop.body.id}`, {
          method: "DELETE",
          token
        })
        assert.deepStrictEqual(removed.body, { id: drop.body.id, removed: { chunks: 2 } })
        assert.strictEqual(yield* vectorCount(drop.body.id), 0)
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.deepStrictEqual([source.body.document_count, source.body.chunk_count], [1, 1])
        const gone = yield* request(url, `/api/v1/sources/${sourceId}/documents/${drop.body.id}`, { token })
        assert.strictEqual(gone.status, 404)
        const deleted = yield* request(url, `/api/v1/sources/${sourceId}`, { method: "DELETE", token })
        assert.deepStrictEqual(deleted.body.removed, { documents: 1, chunks: 1, jobs: 2 })
        assert.strictEqual((yield* request(url, `/api/v1/jobs/${keep.body.job_id}`, { token })).status, 404)
      }))

    it.effect("reprocess builds a new version and swaps it in; actions outside the state machine are 409", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Redo")
        const sourceId = yield* createSource(url, token)
        const accepted = yield* ingestText(url, token, sourceId, "doc", "# One\n\nFirst.\n\n# Two\n\nSecond.")
        const base = `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`
        yield* waitForDocument(url, token, sourceId, accepted.body.id)
        const before = (yield* request(url, `${base}/parse-output`, { token })).body.chunks.map((c: { id: string }) => c.id)
        for (const action of ["pause", "resume"]) {
          const refused = yield* request(url, `${base}/${action}`, { method: "POST", token })
          assert.strictEqual(refused.status, 409, action)
          assert.strictEqual(refused.body.error.code, "action_not_allowed")
          assert.match(refused.body.error.message, /this one is ready/)
        }
        const again = yield* request(url, `${base}/reprocess`, { method: "POST", token })
        assert.strictEqual(again.status, 200)
        assert.notStrictEqual(again.body.job_id, accepted.body.job_id)
        assert.isFalse(again.body.searchable, "search skips a document until its new version is ready")
        const done = yield* waitForDocument(url, token, sourceId, accepted.body.id, (d) => d.status === "ready" && d.job_id === again.body.job_id)
        assert.strictEqual(done.chunk_count, 2)
        const after = (yield* request(url, `${base}/parse-output`, { token })).body.chunks.map((c: { id: string }) => c.id)
        assert.strictEqual(after.length, 2)
        assert.isTrue(after.every((id: string) => !before.includes(id)), "new chunks replaced the old ones")
        const { sql } = yield* TestServer
        const [{ versions }] = yield* sql<{ versions: number }>`
          SELECT count(DISTINCT version)::int AS versions FROM chunks WHERE document_id = ${accepted.body.id}`
        assert.strictEqual(versions, 1)
        assert.strictEqual(yield* vectorCount(accepted.body.id), 2)
        const job = yield* request(url, `/api/v1/jobs/${again.body.job_id}`, { token })
        assert.strictEqual(job.body.kind, "reprocess")
      }))

    it.effect("another user's documents and jobs behave like missing ones", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const owner = yield* login(url, "Doc Owner")
        const other = yield* login(url, "Doc Snoop")
        const sourceId = yield* createSource(url, owner)
        const accepted = yield* ingestText(url, owner, sourceId, "secret", "Top secret.")
        const base = `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`
        for (const [method, path] of [
          ["GET", base],
          ["GET", `${base}/preview`],
          ["GET", `${base}/parse-output`],
          ["POST", `${base}/pause`],
          ["POST", `${base}/resume`],
          ["POST", `${base}/reprocess`],
          ["DELETE", base],
          ["GET", `/api/v1/jobs/${accepted.body.job_id}`]
        ] as const) {
          const reply = yield* request(url, path, { method, token: other })
          assert.strictEqual(reply.status, 404, `${method} ${path}`)
        }
        yield* upload(url, other, sourceId, [{ name: "x.txt", bytes: new TextEncoder().encode("x") }]).pipe(
          Effect.map((reply) => assert.strictEqual(reply.status, 404))
        )
        assert.strictEqual((yield* request(url, base, { token: owner })).status, 200)
      }))
  })

  layer(freshServer(engine, { workerConcurrency: 0 }))(`document states without workers (${engine})`, (it) => {
    it.effect("queued → paused → queued, and refusals say why", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Stateful")
        const sourceId = yield* createSource(url, token)
        const accepted = yield* ingestText(url, token, sourceId, "waiting", "Nobody processes me.")
        const base = `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`
        const act = (action: string) => request(url, `${base}/${action}`, { method: "POST", token })
        assert.strictEqual((yield* act("reprocess")).status, 409)
        const paused = yield* act("pause")
        assert.strictEqual(paused.status, 200)
        assert.strictEqual(paused.body.status, "paused")
        assert.strictEqual((yield* request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token })).body.status, "paused")
        const twice = yield* act("pause")
        assert.strictEqual(twice.status, 409)
        assert.strictEqual(twice.body.error.message, "The document is already paused")
        const filtered = yield* request(url, `/api/v1/sources/${sourceId}/documents?status=paused`, { token })
        assert.strictEqual(filtered.body.items.length, 1)
        const resumed = yield* act("resume")
        assert.strictEqual(resumed.body.status, "queued")
        assert.strictEqual((yield* request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token })).body.status, "queued")
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(source.body.status, "processing")
        const removed = yield* request(url, base, { method: "DELETE", token })
        assert.strictEqual(removed.status, 200)
        const job = yield* request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token })
        assert.strictEqual(job.body.status, "cancelled")
      }))

    it.effect("a file_upload sync resumes paused documents as a job", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Syncer")
        const sourceId = yield* createSource(url, token)
        const accepted = yield* ingestText(url, token, sourceId, "later", "Resume me.")
        yield* request(url, `/api/v1/sources/${sourceId}/documents/${accepted.body.id}/pause`, { method: "POST", token })
        const sync = yield* request(url, `/api/v1/sources/${sourceId}/sync`, { method: "POST", token })
        assert.strictEqual(sync.status, 202)
        assert.strictEqual(sync.body.kind, "sync")
        assert.strictEqual(sync.body.status, "succeeded")
        assert.deepStrictEqual(sync.body.progress, { done: 1, total: 1 })
        const document = yield* request(url, `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`, { token })
        assert.strictEqual(document.body.status, "queued")
        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.isString(source.body.last_synced_at)
      }))
  })
}
