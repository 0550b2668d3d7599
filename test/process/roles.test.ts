import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { randomBytes } from "node:crypto"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, upload } from "../support/ingest.ts"
import { type Engram, exitCode, listeningUrl, spawnEngram } from "../support/process.ts"
import { scratchDatabase, scratchDir } from "../support/server.ts"

const people = ["Alice Moreau", "Bruno Keller", "Chiara Rossi", "Dmitri Volkov", "Esther Okafor", "Farid Haddad"]
const places = ["Lyon", "Zurich", "Turin", "Riga", "Lagos", "Beirut"]

/** A short Markdown document, distinct per index, with names, places and dates for the event extractor. */
const documentText = (index: number) => {
  const who = people[index % people.length]!
  const other = people[(index + 1) % people.length]!
  const where = places[index % places.length]!
  return `# Report ${index}\n\n${who} met ${other} in ${where} on ${1 + (index % 28)} March 2024 to review ledger ${index}. ` +
    `${other} signed contract number ${index * 7} with ${who} in ${where} the following week.`
}

/** Polls `check` every 200 ms until it holds, at most `ms`. */
const eventually = <A>(what: string, check: Effect.Effect<A | undefined>, ms = 120_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const found = yield* check
      if (found !== undefined) return found
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting until ${what}`))
  })

const started = Date.now()
const phase = (name: string) => Effect.sync(() => console.log(`[roles] ${((Date.now() - started) / 1000).toFixed(1)} s: ${name}`))

describe("roles on one PostgreSQL: one api and two worker processes", () => {
  it.live("200 documents ingested through the api all become ready exactly once while a worker is killed and restarted", () =>
    Effect.gen(function*() {
      const { url: databaseUrl } = yield* scratchDatabase
      const sql = yield* PgClient.make({ url: Redacted.make(databaseUrl), maxConnections: 2 }).pipe(
        Effect.provide(Reactivity.layer)
      )
      const shared = {
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        DATABASE_URL: databaseUrl,
        ENGRAM_JWT_SECRET: randomBytes(32).toString("hex"),
        ENGRAM_CHUNK_TOKENS: "64",
        // A dead worker's job is taken over 2 s after its last renewal.
        ENGRAM_JOB_LEASE_SECONDS: "2",
        ENGRAM_WORKER_CONCURRENCY: "2"
      }
      const startWorker = Effect.gen(function*() {
        const worker = yield* spawnEngram({ ...shared, ENGRAM_ROLE: "worker", ENGRAM_DATA_DIR: yield* scratchDir })
        return { worker, url: yield* listeningUrl(worker) }
      })
      const api = yield* spawnEngram({ ...shared, ENGRAM_ROLE: "api", ENGRAM_DATA_DIR: yield* scratchDir })
      const apiUrl = yield* listeningUrl(api)
      yield* phase("api listening")
      const first = yield* startWorker
      const second = yield* startWorker
      yield* phase("workers listening")

      // What each role serves.
      yield* waitUntilReady(apiUrl)
      const apiReady = yield* request(apiUrl, "/api/v1/system/ready")
      assert.include(JSON.stringify(apiReady.body.checks), "ENGRAM_ROLE=api")
      yield* waitUntilReady(first.url)
      const workerReady = yield* request(first.url, "/api/v1/system/ready")
      assert.strictEqual(workerReady.status, 200)
      assert.include(JSON.stringify(workerReady.body.checks), "2 running")
      const elsewhere = yield* request(first.url, "/api/v1/auth/login", { json: { name: "Nobody" } })
      assert.strictEqual(elsewhere.status, 404)
      assert.strictEqual(elsewhere.body.error.code, "not_served_here")
      assert.include(elsewhere.body.error.message, "ENGRAM_ROLE=api")
      assert.strictEqual((yield* request(first.url, "/docs")).status, 404)

      const token = yield* login(apiUrl, "Scaler")
      yield* phase("roles checked")
      const sourceId = yield* createSource(apiUrl, token)
      const count = 200
      for (let batch = 0; batch < count; batch += 50) {
        const accepted = yield* upload(
          apiUrl,
          token,
          sourceId,
          Array.from({ length: 50 }, (_, i) => ({
            name: `report-${batch + i}.md`,
            bytes: new TextEncoder().encode(documentText(batch + i))
          }))
        )
        assert.strictEqual(accepted.status, 202, accepted.text)
      }

      yield* phase("uploaded")
      // Killed while it certainly holds a job: the lease of the dead process is still in the database.
      const killMidRun = (target: Engram) =>
        Effect.gen(function*() {
          const owner = `%:${target.child.pid}:%`
          yield* eventually(
            "the worker runs a job",
            sql<{ id: string }>`SELECT id FROM jobs WHERE status = 'running' AND lease_owner LIKE ${owner}`.pipe(
              Effect.orDie,
              Effect.map((rows) => rows[0])
            ),
            60_000
          )
          target.child.kill("SIGKILL")
          yield* exitCode(target)
          const [state] = yield* sql<{ held: number; ready: number }>`
            SELECT
              (SELECT count(*)::int FROM jobs WHERE status = 'running' AND lease_owner LIKE ${owner}) AS held,
              (SELECT count(*)::int FROM documents WHERE source_id = ${sourceId} AND status = 'ready') AS ready`
            .pipe(Effect.orDie)
          return state!
        })
      let victim = first
      let atKill = { held: 0, ready: 0 }
      for (let attempt = 0; attempt < 5 && atKill.held === 0; attempt++) {
        atKill = yield* killMidRun(victim.worker)
        victim = yield* startWorker
      }
      assert.isAbove(atKill.held, 0, "a worker was killed while it held a job")
      assert.isBelow(atKill.ready, count, "the kill happened mid-run")
      yield* phase("killed")

      yield* eventually(
        "every document is ready",
        sql<{ unfinished: number }>`
          SELECT count(*)::int AS unfinished FROM documents WHERE source_id = ${sourceId} AND status <> 'ready'`.pipe(
          Effect.orDie,
          Effect.map((rows) => (rows[0]!.unfinished === 0 ? true : undefined))
        ),
        240_000
      ).pipe(Effect.tapDefect(() =>
        sql<{ status: string; stage: string | null; n: number }>`
          SELECT status, stage, count(*)::int AS n FROM jobs GROUP BY status, stage`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => phase(`jobs when the wait ended: ${JSON.stringify(rows)}`))
        )
      ))

      yield* phase("all ready")
      const [documents] = yield* sql<{ total: number; active: number }>`
        SELECT count(*)::int AS total, count(active_version)::int AS active FROM documents WHERE source_id = ${sourceId}`
        .pipe(Effect.orDie)
      assert.deepStrictEqual(documents, { total: count, active: count })

      const [jobs] = yield* sql<{ total: number; succeeded: number; retaken: number }>`
        SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
          count(*) FILTER (WHERE attempts > 0)::int AS retaken
        FROM jobs WHERE source_id = ${sourceId} AND document_id IS NOT NULL`.pipe(Effect.orDie)
      assert.strictEqual(jobs!.total, count, "one job per document")
      assert.strictEqual(jobs!.succeeded, count)
      assert.isAtLeast(jobs!.retaken, 1, "the killed worker's job was taken over")

      // Chunks: only the active version of each document, ordinals 0..n-1.
      const [chunks] = yield* sql<{ total: number; stale: number; gapped: number }>`
        SELECT
          (SELECT count(*)::int FROM chunks WHERE source_id = ${sourceId}) AS total,
          (SELECT count(*)::int FROM chunks c JOIN documents d ON d.id = c.document_id
            WHERE c.source_id = ${sourceId} AND c.version <> d.active_version) AS stale,
          (SELECT count(*)::int FROM (
            SELECT document_id FROM chunks WHERE source_id = ${sourceId}
            GROUP BY document_id, version HAVING count(*) <> max(ordinal) + 1) g) AS gapped`.pipe(Effect.orDie)
      assert.isAtLeast(chunks!.total, count)
      assert.strictEqual(chunks!.stale, 0, "no chunk of another version is left")
      assert.strictEqual(chunks!.gapped, 0, "no duplicated or missing ordinal")

      // Events: only the active version's, each ordinal once.
      const [events] = yield* sql<{ total: number; stale: number; distinct: number }>`
        SELECT count(*)::int AS total,
          count(*) FILTER (WHERE e.version <> d.active_version)::int AS stale,
          count(DISTINCT (e.document_id, e.version, e.ordinal))::int AS distinct
        FROM events e JOIN documents d ON d.id = e.document_id WHERE e.source_id = ${sourceId}`.pipe(Effect.orDie)
      assert.isAtLeast(events!.total, count, "extraction ran")
      assert.strictEqual(events!.stale, 0)
      assert.strictEqual(events!.distinct, events!.total, "no duplicated event")

      // Postings and BM25 statistics count every chunk exactly once.
      const [lexical] = yield* sql<{ counted: number; length: number; lexemes: number; wrongDf: number }>`
        SELECT s.chunk_count::int AS counted, s.total_length::int AS length,
          (SELECT coalesce(sum(lexeme_count), 0)::int FROM chunks WHERE source_id = ${sourceId}) AS lexemes,
          (SELECT count(*)::int FROM lexical_terms t WHERE t.source_id = ${sourceId} AND t.df <> (
            SELECT count(*) FROM chunk_terms ct JOIN chunks c ON c.id = ct.chunk_id
            WHERE ct.term = t.term AND c.source_id = t.source_id)) AS "wrongDf"
        FROM lexical_stats s WHERE s.source_id = ${sourceId}`.pipe(Effect.orDie)
      assert.strictEqual(lexical!.counted, chunks!.total, "each chunk counted once")
      assert.strictEqual(lexical!.length, lexical!.lexemes)
      assert.strictEqual(lexical!.wrongDf, 0, "document frequencies match the postings")
      const [orphans] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM lexical_terms t WHERE t.source_id = ${sourceId} AND NOT EXISTS (
          SELECT 1 FROM chunk_terms ct JOIN chunks c ON c.id = ct.chunk_id WHERE ct.term = t.term AND c.source_id = t.source_id)`
        .pipe(Effect.orDie)
      assert.strictEqual(orphans!.n, 0)

      // Vectors: one per chunk in the active model's table.
      const [model] = yield* sql<{ table_name: string }>`SELECT table_name FROM embedding_models WHERE status = 'active'`
        .pipe(Effect.orDie)
      const [vectors] = yield* sql.unsafe<{ total: number; chunks: number }>(
        `SELECT count(*)::int AS total, count(DISTINCT v.chunk_id)::int AS chunks FROM ${model!.table_name} v
         JOIN chunks c ON c.id = v.chunk_id WHERE c.source_id = $1`,
        [sourceId]
      ).pipe(Effect.orDie)
      assert.deepStrictEqual(vectors, { total: chunks!.total, chunks: chunks!.total })

      // The api answers for what the workers did.
      const source = yield* request(apiUrl, `/api/v1/sources/${sourceId}`, { token })
      assert.strictEqual(source.body.document_count, count)
      assert.strictEqual(source.body.chunk_count, chunks!.total)
      assert.strictEqual(source.body.status, "ready")
      for (const engram of [api, second.worker, victim.worker]) {
        engram.child.kill("SIGTERM")
        assert.strictEqual(yield* exitCode(engram, 30_000), 0, engram.output())
      }
    }).pipe(Effect.scoped), 600_000)
})

describe("roles need a shared database", () => {
  for (const role of ["api", "worker"]) {
    it.live(`ENGRAM_ROLE=${role} on the embedded database stops start-up with one line saying why`, () =>
      Effect.gen(function*() {
        const engram = yield* spawnEngram({
          ENGRAM_ROLE: role,
          ENGRAM_DATA_DIR: yield* scratchDir,
          ENGRAM_HOST: "127.0.0.1",
          ENGRAM_PORT: "0"
        })
        assert.strictEqual(yield* exitCode(engram), 1)
        assert.include(engram.output(), `engram: ENGRAM_ROLE=${role} needs a database shared with the other processes`)
        assert.include(engram.output(), "DATABASE_URL")
      }).pipe(Effect.scoped), 120_000)
  }
})
