import { Effect, Layer, Metric, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { timingSafeEqual } from "node:crypto"
import { EngramConfig } from "../config.ts"

const secondsBoundaries = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

/** Time of one pipeline stage of one job, by stage and outcome. */
export const stageDuration = Metric.histogram("engram_stage_duration_seconds", {
  description: "Time of one ingestion stage (parse, chunk, extract, embed, index) of one job",
  boundaries: secondsBoundaries
})

/** Time of one search, by strategy. */
export const searchDuration = Metric.histogram("engram_search_duration_seconds", {
  description: "Time of one search from sources resolved to results ready",
  boundaries: secondsBoundaries
})

export const httpRequests = Metric.counter("engram_http_requests_total", {
  description: "HTTP requests answered, by method, route and status",
  incremental: true
})

export const embeddedPassages = Metric.counter("engram_embedder_passages_total", {
  description: "Passages embedded (rate() gives passages per second)",
  incremental: true
})

export const embeddingSeconds = Metric.counter("engram_embedder_seconds_total", {
  description: "Time spent embedding",
  incremental: true
})

const jobs = Metric.gauge("engram_jobs", { description: "Jobs by status and kind" })
const oldestQueued = Metric.gauge("engram_queue_oldest_age_seconds", {
  description: "Age of the oldest queued job (0 when none waits)"
})
const documents = Metric.gauge("engram_documents", { description: "Documents by status" })

/** Records how long `effect` took in `histogram` with `attributes`, whatever its outcome. */
export const timed = <A, E, R>(
  histogram: typeof stageDuration,
  attributes: Record<string, string>,
  effect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const started = performance.now()
    return yield* effect.pipe(
      Effect.onExit((exit) =>
        Metric.update(
          Metric.withAttributes(histogram, { ...attributes, outcome: exit._tag === "Success" ? "ok" : "failed" }),
          (performance.now() - started) / 1000
        )
      )
    )
  })

/** Segments of our paths that are words, not ids: lower-case letters, dashes and underscores, or a version. */
const word = /^(?:[a-z][a-z_-]{0,31}|v\d{1,2})$/

/** An id-free route for a path, so that labels stay few: every segment that is not a word becomes `{id}`. */
export const routeOf = (url: string) =>
  (url.split("?")[0] ?? "").split("/").map((segment) => segment === "" || word.test(segment) ? segment : "{id}").join("/")

/** The gauges read from the database at scrape time: queue and documents as they are now, in every process. */
const refreshGauges = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const byStatus = yield* sql<{ status: string; kind: string; n: number }>`
    SELECT status, kind, count(*)::int AS n FROM jobs GROUP BY status, kind`
  for (const row of byStatus) yield* Metric.update(Metric.withAttributes(jobs, { status: row.status, kind: row.kind }), row.n)
  const [oldest] = yield* sql<{ age: number | null }>`
    SELECT extract(epoch FROM now() - min(created_at))::float8 AS age FROM jobs WHERE status = 'queued'`
  yield* Metric.update(oldestQueued, oldest?.age ?? 0)
  const docs = yield* sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM documents GROUP BY status`
  const seen = new Set(docs.map((row) => row.status))
  for (const status of ["queued", "processing", "paused", "ready", "failed"]) {
    if (!seen.has(status)) yield* Metric.update(Metric.withAttributes(documents, { status }), 0)
  }
  for (const row of docs) yield* Metric.update(Metric.withAttributes(documents, { status: row.status }), row.n)
})

const sameSecret = (given: string, expected: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * GET /metrics in the Prometheus text format, when ENGRAM_METRICS=true; with ENGRAM_METRICS_TOKEN it wants
 * `Authorization: Bearer <token>`. Off: no route (404 like any unknown path).
 */
export const MetricsRoute = Layer.unwrap(Effect.gen(function*() {
  const config = yield* EngramConfig
  if (!config.metrics) return Layer.empty
  const sql = yield* SqlClient.SqlClient
  return HttpRouter.add(
    "GET",
    "/metrics",
    Effect.gen(function*() {
      if (Option.isSome(config.metricsToken)) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const given = /^Bearer\s+(\S+)$/i.exec(request.headers["authorization"] ?? "")?.[1] ?? ""
        if (!sameSecret(given, Redacted.value(config.metricsToken.value))) {
          return HttpServerResponse.jsonUnsafe(
            { error: { code: "unauthorized", message: "Send Authorization: Bearer <ENGRAM_METRICS_TOKEN>" } },
            { status: 401 }
          )
        }
      }
      yield* refreshGauges.pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
      return HttpServerResponse.text(yield* PrometheusMetrics.format(), {
        contentType: "text/plain; version=0.0.4; charset=utf-8"
      })
    })
  )
}))
