import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { tracingRequested } from "../../src/observability/Tracing.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { ancestorsOf, otlpReceiver, waitFor } from "../support/otlp.ts"
import { listeningUrl, spawnEngram } from "../support/process.ts"
import { scratchDir } from "../support/server.ts"

describe("traces over OTLP/HTTP", () => {
  it.effect("one ingested document is one trace from the request to ready; a search has a span per list", () =>
    Effect.scoped(Effect.gen(function*() {
      const collector = yield* otlpReceiver
      const dataDir = yield* scratchDir
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_PORT: "0",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: "engram-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "100"
      })
      const url = yield* listeningUrl(engram)
      const token = yield* login(url, "Tess")
      const source = yield* createSource(url, token)
      const text = "Grace Hopper found a moth in the Mark II on 9 September 1947."
      const added = yield* ingestText(url, token, source, "Logbook", text)
      yield* waitForDocument(url, token, source, added.body.id)
      const searched = yield* request(url, "/api/v1/search", { token, json: { query: "moth Hopper", strategy: "multi" } })
      assert.strictEqual(searched.status, 200)

      // A span is exported when it ends, in batches: the job's span ends after its stages, so wait for both.
      const indexSpan = yield* waitFor(
        () => collector.spans.find((span) => span.name === "engram.stage.index" && span.attributes["engram.document.id"] === added.body.id),
        "index stage span"
      )
      yield* waitFor(
        () => collector.spans.find((span) => span.name === "engram.job.ingest" && span.traceId === indexSpan.traceId),
        "job span"
      )
      const trace = collector.spans.filter((span) => span.traceId === indexSpan.traceId)
      // The job's span is a child of the request that queued it, and the stages are children of the job.
      const job = trace.find((span) => span.name === "engram.job.ingest")
      assert.isDefined(job, trace.map((span) => span.name).join(", "))
      assert.strictEqual(job!.attributes["engram.document.id"], added.body.id)
      assert.strictEqual(job!.attributes["engram.source.id"], source)
      assert.strictEqual(job!.attributes["engram.job.attempt"], 1)
      const root = trace.find((span) => span.parentSpanId === undefined || span.parentSpanId === "")
      assert.isDefined(root)
      assert.strictEqual(root!.attributes["http.request.method"], "POST")
      assert.isString(root!.attributes["engram.request_id"])
      assert.include(String(root!.attributes["http.route"]), "/documents/ingest")
      assert.notInclude(String(root!.attributes["http.route"]), source)
      assert.strictEqual(root!.attributes["http.response.status_code"], 202)
      const ancestors = (span: (typeof trace)[number]) => ancestorsOf(trace, span).map((one) => one.name)
      assert.include(ancestors(job!), root!.name)
      for (const stage of ["parse", "chunk", "extract", "embed", "index"]) {
        const span = trace.find((one) => one.name === `engram.stage.${stage}`)
        assert.isDefined(span, stage)
        assert.include(ancestors(span!), "engram.job.ingest", stage)
        assert.strictEqual(span!.attributes["engram.document.id"], added.body.id)
      }
      assert.strictEqual(trace.find((span) => span.name === "engram.stage.parse")!.attributes["engram.document.bytes"], Buffer.byteLength(text))
      assert.strictEqual(trace.find((span) => span.name === "engram.stage.chunk")!.attributes["engram.document.chunks"], 1)
      const embedding = trace.find((span) => span.name === "embeddings tiny-random-bert")
      assert.isDefined(embedding, trace.map((span) => span.name).join(", "))
      assert.include(ancestors(embedding!), "Embedder.embed")
      assert.strictEqual(embedding!.attributes["gen_ai.operation.name"], "embeddings")
      assert.strictEqual(embedding!.attributes["gen_ai.provider.name"], "onnx")
      assert.isAbove(Number(embedding!.attributes["gen_ai.embeddings.dimension.count"]), 0)

      const search = yield* waitFor(() => collector.spans.find((span) => span.name === "Retriever.search"), "search span")
      const searchTrace = collector.spans.filter((span) => span.traceId === search.traceId).map((span) => span.name)
      for (const name of ["LexicalIndex.search", "GraphSearch.search", "Retriever.fuse"]) assert.include(searchTrace, name)

      // No document text, token or secret in any attribute.
      const everything = collector.bodies.join("\n")
      assert.notInclude(everything, "Mark II")
      assert.notInclude(everything, token)
      const resource = JSON.parse(collector.bodies[0]!).resourceSpans[0].resource.attributes
      assert.deepInclude(resource, { key: "service.name", value: { stringValue: "engram-under-test" } })
    })), 180_000)

  it("export is requested only by an OTLP endpoint, and not when the SDK or the traces exporter is off", () => {
    assert.isFalse(tracingRequested({}))
    assert.isFalse(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }))
    assert.isTrue(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }))
    assert.isTrue(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" }))
    assert.isFalse(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" }))
    assert.isFalse(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }))
  })

  it.effect("with the traces exporter off nothing is exported, not even at shutdown, which flushes when it is on", () =>
    Effect.scoped(Effect.gen(function*() {
      const collector = yield* otlpReceiver
      /** Ingests and searches once, then stops the process (a clean shutdown flushes what the SDK buffered). */
      const session = (env: Record<string, string>) =>
        Effect.scoped(Effect.gen(function*() {
          const engram = yield* spawnEngram({
            ENGRAM_DATA_DIR: yield* scratchDir,
            ENGRAM_PORT: "0",
            OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
            // Nothing is sent on a schedule within the session: only the flush at shutdown can send.
            OTEL_BSP_SCHEDULE_DELAY: "600000",
            ...env
          })
          const url = yield* listeningUrl(engram)
          const token = yield* login(url, "Tess")
          const source = yield* createSource(url, token)
          const added = yield* ingestText(url, token, source, "Note", "Punched cards fed the tabulator.")
          yield* waitForDocument(url, token, source, added.body.id)
          const searched = yield* request(url, "/api/v1/search", { token, json: { query: "tabulator" } })
          assert.strictEqual(searched.status, 200)
        }))
      yield* session({ OTEL_TRACES_EXPORTER: "none" })
      assert.strictEqual(collector.bodies.length, 0)
      yield* session({})
      assert.isAbove(collector.spans.length, 0)
      assert.isDefined(collector.spans.find((span) => span.name === "engram.job.ingest"))
    })), 180_000)
})
