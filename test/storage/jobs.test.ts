import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { claimStatement, Jobs } from "../../src/stores/Jobs.ts"
import { Lifecycle } from "../../src/stores/Lifecycle.ts"
import { Pipeline } from "../../src/background/Pipeline.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText } from "../support/ingest.ts"
import { engines, freshSettings, serverLayer, TestServer } from "../support/server.ts"

/** A server without workers, with its services in context, so the test drives the queue itself. */
const withQueue = <A, E, R>(use: Effect.Effect<A, E, R>, engine: (typeof engines)[number], jobMaxAttempts = 3) =>
  Effect.gen(function*() {
    const settings = yield* freshSettings(engine, { workerConcurrency: 0, jobMaxAttempts })
    const context = yield* Layer.build(serverLayer(settings))
    return yield* use.pipe(Effect.provide(context))
  }).pipe(Effect.scoped)

const userId = (url: string, name: string) =>
  Effect.gen(function*() {
    const token = yield* login(url, name)
    return (yield* request(url, "/api/v1/auth/me", { token })).body.id as string
  })

describe("job claiming", () => {
  for (const engine of engines) {
    it.live(`one owner's backlog does not starve another owner's later job (${engine})`, () =>
      withQueue(
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const jobs = yield* Jobs
          const big = yield* userId(url, "Bulk Uploader")
          const small = yield* userId(url, "Small Uploader")
          const backlog = yield* Effect.forEach(
            Array.from({ length: 6 }),
            () => jobs.enqueue({ ownerId: big, kind: "reindex" })
          )
          const first = yield* jobs.claim("worker-1", 60)
          assert.strictEqual(Option.getOrThrow(first).id, backlog[0]!.id)
          const late = yield* jobs.enqueue({ ownerId: small, kind: "reindex" })
          const second = yield* jobs.claim("worker-2", 60)
          assert.strictEqual(Option.getOrThrow(second).id, late.id, "the owner with no running job goes first")
          const third = yield* jobs.claim("worker-3", 60)
          assert.strictEqual(Option.getOrThrow(third).id, backlog[1]!.id, "then the backlog, oldest first")
        }),
        engine
      ))
  }
})

/** Rows the plan's scans of `jobs` read (returned or filtered out), over all their loops (EXPLAIN ANALYZE, JSON). */
const jobRowsRead = (node: Record<string, unknown>): number => {
  const read = ["Actual Rows", "Rows Removed by Filter", "Rows Removed by Index Recheck"]
    .reduce((sum, key) => sum + Number(node[key] ?? 0), 0) * Number(node["Actual Loops"] ?? 1)
  const children = (node.Plans ?? []) as ReadonlyArray<Record<string, unknown>>
  return (node["Relation Name"] === "jobs" ? read : 0) + children.reduce((sum, child) => sum + jobRowsRead(child), 0)
}

describe("job claiming under a long queue", () => {
  for (const engine of engines) {
    it.live(`a claim reads a few rows, however long the queue, and still takes the fair job (${engine})`, () =>
      withQueue(
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* SqlClient.SqlClient
          const jobs = yield* Jobs
          const bulk = yield* userId(url, "Bulk Uploader")
          const other = yield* userId(url, "Other Uploader")
          // 3,000 finished jobs and 3,000 queued ones of one owner, then another owner's job and a retry waiting.
          yield* sql`
            INSERT INTO jobs (owner_id, kind, status, created_at)
            SELECT ${bulk}, 'reindex', CASE WHEN g <= 3000 THEN 'succeeded' ELSE 'queued' END,
              now() - make_interval(secs => 10000 - g)
            FROM generate_series(1, 6000) g`
          const first = yield* jobs.claim("worker-1", 60)
          const late = yield* jobs.enqueue({ ownerId: other, kind: "reindex" })
          yield* sql`
            INSERT INTO jobs (owner_id, kind, status, run_after)
            VALUES (${other}, 'reindex', 'queued', now() + interval '1 hour')`
          yield* sql`ANALYZE jobs`
          // The second claim, run and explained.
          const [text, params] = claimStatement(sql, "worker-2", 60).compile()
          const [explained] = yield* sql.unsafe<{ "QUERY PLAN": unknown }>(
            `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
            params
          )
          const plan = explained!["QUERY PLAN"]
          const [root] = (typeof plan === "string" ? JSON.parse(plan) : plan) as ReadonlyArray<{ Plan: object }>
          const read = jobRowsRead(root!.Plan as Record<string, unknown>)
          assert.isAtMost(read, 20, `rows of jobs read by one claim with 3,000 queued: ${read}`)
          const [second] = yield* sql<{ id: string }>`SELECT id FROM jobs WHERE lease_owner = 'worker-2'`
          assert.strictEqual(second?.id, late.id, "the owner with no running job goes first")
          const [oldest] = yield* sql<{ id: string }>`
            SELECT id FROM jobs WHERE status = 'queued' AND owner_id = ${bulk} ORDER BY created_at, id LIMIT 1`
          const third = Option.getOrThrow(yield* jobs.claim("worker-3", 60))
          assert.strictEqual(third.id, oldest!.id, "then the backlog's oldest job; the retry waiting is not due")
          assert.notStrictEqual(third.id, Option.getOrThrow(first).id)
        }),
        engine
      ))
  }
})

describe("job attempts and progress", () => {
  for (const engine of engines) {
    it.live(`a pause and resume is no failed attempt, and progress reaches its total (${engine})`, () =>
      withQueue(
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const jobs = yield* Jobs
          const pipeline = yield* Pipeline
          const lifecycle = yield* Lifecycle
          const token = yield* login(url, "Pauser")
          const sourceId = yield* createSource(url, token)
          const accepted = yield* ingestText(url, token, sourceId, "Plan", "# Plan\n\nShip it.\n\n## Risks\n\nNone.")
          const base = `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`
          const jobOf = () => request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token }).pipe(Effect.map((r) => r.body))
          const claimed = Option.getOrThrow(yield* jobs.claim("worker-1", 60))
          assert.strictEqual(claimed.id, accepted.body.job_id)
          assert.strictEqual((yield* request(url, `${base}/pause`, { method: "POST", token })).status, 200)
          const paused = yield* Effect.exit(pipeline.run(claimed))
          assert.deepStrictEqual(paused, Exit.succeed("paused"))
          yield* lifecycle.settle(claimed, paused)
          assert.strictEqual((yield* jobOf()).status, "paused")
          assert.strictEqual((yield* request(url, `${base}/resume`, { method: "POST", token })).status, 200)
          assert.strictEqual((yield* jobOf()).status, "queued")
          const again = Option.getOrThrow(yield* jobs.claim("worker-1", 60))
          assert.strictEqual(again.attempts, 0, "claiming again after a pause is not a failed attempt")
          yield* lifecycle.settle(again, yield* Effect.exit(pipeline.run(again)))
          const job = yield* jobOf()
          assert.strictEqual(job.status, "succeeded")
          assert.strictEqual(job.attempts, 0)
          assert.strictEqual(job.progress.total, 3 * 2, "three steps (extract, embed, index) for each of 2 chunks")
          assert.strictEqual(job.progress.done, job.progress.total)
          const document = yield* request(url, base, { token })
          assert.strictEqual(document.body.status, "ready")
          assert.strictEqual(document.body.chunk_count, 2)
        }),
        engine
      ))
  }
})

describe("job failures", () => {
  for (const engine of engines) {
    it.live(`failures count as attempts: retried, then the job and its document fail together (${engine})`, () =>
      withQueue(
        Effect.gen(function*() {
          const { url, sql } = yield* TestServer
          const jobs = yield* Jobs
          const lifecycle = yield* Lifecycle
          const token = yield* login(url, "Unlucky")
          const sourceId = yield* createSource(url, token)
          const accepted = yield* ingestText(url, token, sourceId, "Plan", "Ship it on Friday.")
          const base = `/api/v1/sources/${sourceId}/documents/${accepted.body.id}`
          const jobOf = () => request(url, `/api/v1/jobs/${accepted.body.job_id}`, { token }).pipe(Effect.map((r) => r.body))
          const transient = Exit.fail({ code: "embedding_failed", message: "the model server is down", stage: "embed", permanent: false })

          // A lapsed lease is a worker that died: taking the job back counts as a failed attempt.
          const lapsed = Option.getOrThrow(yield* jobs.claim("worker-1", 0))
          assert.strictEqual(lapsed.attempts, 0)
          yield* sql`UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ${lapsed.id}`
          const taken = Option.getOrThrow(yield* jobs.claim("worker-2", 60))
          assert.strictEqual(taken.attempts, 1)
          yield* lifecycle.settle(lapsed, transient)
          assert.strictEqual((yield* jobOf()).status, "running", "only the worker holding the lease settles the job")

          yield* lifecycle.settle(taken, transient)
          const retried = yield* jobOf()
          assert.deepStrictEqual([retried.status, retried.attempts, retried.error?.code], ["queued", 2, "embedding_failed"])
          assert.strictEqual((yield* request(url, base, { token })).body.status, "queued")

          yield* sql`UPDATE jobs SET run_after = now() WHERE id = ${taken.id}`
          const last = Option.getOrThrow(yield* jobs.claim("worker-1", 60))
          assert.strictEqual(last.attempts, 2)
          yield* lifecycle.settle(last, transient)
          const failed = yield* jobOf()
          assert.deepStrictEqual([failed.status, failed.attempts], ["failed", 3])
          assert.isString(failed.finished_at)
          const document = (yield* request(url, base, { token })).body
          assert.strictEqual(document.status, "failed")
          assert.strictEqual(document.error.code, "embedding_failed")
          assert.match(document.error.message, /gave up after 3 attempts/)
        }),
        engine
      ))
  }
})
