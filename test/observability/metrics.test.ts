import { assert, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/** The value of the first sample whose line starts with `prefix` (name and labels as printed), else undefined. */
const sample = (text: string, name: string, labels: Record<string, string>) => {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    const body = /\{([^}]*)\}/.exec(line)?.[1] ?? ""
    if (Object.entries(labels).every(([key, value]) => body.includes(`${key}="${value}"`))) {
      return Number(line.slice(line.lastIndexOf(" ") + 1))
    }
  }
  return undefined
}

const secret = "scrape-secret-of-this-test"

for (const engine of engines) {
  layer(freshServer(engine, { metrics: true, metricsToken: Option.some(Redacted.make(secret)) }))(
    `metrics (${engine})`,
    (it) => {
      it.effect("GET /metrics after an ingest and a search: queue, documents, stages, searches, requests", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const token = yield* login(url, "Mira")
          const source = yield* createSource(url, token)
          const added = yield* ingestText(url, token, source, "Note", "Ada Lovelace wrote the first program in 1843.")
          yield* waitForDocument(url, token, source, added.body.id)
          const searched = yield* request(url, "/api/v1/search", { token, json: { query: "Lovelace program", strategy: "lexical" } })
          assert.strictEqual(searched.status, 200)

          assert.strictEqual((yield* request(url, "/metrics")).status, 401)
          assert.strictEqual((yield* request(url, "/metrics", { headers: { authorization: "Bearer wrong" } })).status, 401)
          const scraped = yield* request(url, "/metrics", { headers: { authorization: `Bearer ${secret}` } })
          assert.strictEqual(scraped.status, 200)
          assert.include(scraped.headers.get("content-type") ?? "", "text/plain")
          const text = scraped.text
          assert.isAtLeast(sample(text, "engram_documents", { status: "ready" }) ?? 0, 1)
          assert.strictEqual(sample(text, "engram_documents", { status: "failed" }), 0)
          assert.isAtLeast(sample(text, "engram_jobs", { status: "succeeded" }) ?? 0, 1)
          assert.isDefined(sample(text, "engram_queue_oldest_age_seconds", {}))
          for (const stage of ["parse", "chunk", "extract", "embed", "index"]) {
            assert.isAtLeast(sample(text, "engram_stage_duration_seconds_count", { stage, outcome: "ok" }) ?? 0, 1, stage)
          }
          assert.isAtLeast(sample(text, "engram_search_duration_seconds_count", { strategy: "lexical", outcome: "ok" }) ?? 0, 1)
          assert.isAtLeast(
            sample(text, "engram_http_requests_total", { method: "POST", route: "/api/v1/search", status: "200" }) ?? 0,
            1
          )
          // Ids never become label values.
          assert.notInclude(text, source)
          assert.notInclude(text, added.body.id)
        }))
    }
  )
}

layer(freshServer("pglite"))("metrics off by default", (it) => {
  it.effect("no /metrics route unless ENGRAM_METRICS=true", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      assert.strictEqual((yield* request(url, "/metrics")).status, 404)
    }))
})
