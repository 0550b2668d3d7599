import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, References } from "effect"
import * as Http from "node:http"
import { EngramConfig } from "../../src/config.ts"
import type { ExtractionInput } from "../../src/extract/Extraction.ts"
import { batches, llmBatchChars } from "../../src/extract/llm.ts"
import { Extractor } from "../../src/adapters/Extractor.ts"
import { IngestThreads } from "../../src/adapters/IngestThreads.ts"
import { LlmClient } from "../../src/adapters/LlmClient.ts"
import { chatServer } from "../support/chatServer.ts"

/** The Extractor as start-up builds it from these environment variables. */
const extractorFrom = (env: Record<string, string>) =>
  Layer.build(Extractor.layer.pipe(
    Layer.provide(Layer.mergeAll(LlmClient.layer, IngestThreads.layer)),
    Layer.provide(EngramConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
  )).pipe(
    Effect.map((context) => Context.get(context, Extractor)),
    Effect.provideService(References.MinimumLogLevel, "None")
  )

const input: ExtractionInput = {
  title: "deal",
  documentDate: "2021-03-10T00:00:00.000Z",
  chunks: [{ ordinal: 0, text: "On March 3, 2021, Acme Corp acquired Globex in Berlin.", speaker: null, spokenAt: null }]
}

const modelAnswer = JSON.stringify({
  entities: [
    { name: "Acme Corp", kind: "organization", aliases: ["Acme"], description: "A buyer." },
    { name: "Globex", kind: "organization" },
    { name: "Berlin", kind: "place" },
    { name: "Mystery", kind: "spaceship" }
  ],
  events: [
    {
      statement: "Acme Corp acquired Globex.",
      kind: "acquire",
      chunk: 0,
      participants: [{ name: "Acme", role: "actor" }, { name: "Globex", role: "object" }, { name: "Nobody", role: "actor" }],
      time: { start: "2021-03-03T00:00:00Z", end: "2021-03-04T00:00:00Z", precision: "day", text: "March 3, 2021" },
      place: "Berlin",
      confidence: 0.9
    },
    { statement: "Someone unknown did something.", kind: "do", chunk: 0, participants: [{ name: "Ghost", role: "actor" }] }
  ]
})

describe("LLM extraction", () => {
  it.live("the model's JSON (even in a code fence) becomes a validated extraction", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ reply: () => "Here it is:\n```json\n" + modelAnswer + "\n```" })
      const extractor = yield* extractorFrom({ ENGRAM_LLM_BASE_URL: server.url, ENGRAM_LLM_MAX_RETRIES: "0" })
      assert.strictEqual(extractor.name, "llm")
      const { extraction, by } = yield* extractor.extract(input)
      assert.strictEqual(by, "llm")
      const byName = new Map(extraction.entities.map((e) => [e.name, e]))
      assert.strictEqual(byName.get("Acme Corp")!.kind, "organization")
      assert.deepStrictEqual(byName.get("Acme Corp")!.aliases, ["Acme"])
      assert.strictEqual(byName.get("Mystery")!.kind, "other", "an unknown kind is other")
      assert.strictEqual(extraction.events.length, 1, "an event without a listed participant is dropped")
      const event = extraction.events[0]!
      assert.strictEqual(event.kind, "acquire")
      assert.deepStrictEqual(event.participants.map((p) => p.role), ["actor", "object"])
      assert.strictEqual(event.place, byName.get("Berlin")!.key)
      assert.deepStrictEqual(event.time && [event.time.start, event.time.precision], ["2021-03-03T00:00:00.000Z", "day"])
      assert.deepStrictEqual(event.chunkOrdinals, [0])
      const prompt = server.requests[0]!.messages.map((m) => String(m.content)).join("\n")
      assert.include(prompt, "Acme Corp acquired Globex in Berlin.")
      assert.include(prompt, "Document date: 2021-03-10")
    }).pipe(Effect.scoped))

  it.live("the model sees each chat message's own time, which anchors its relative dates", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ reply: () => JSON.stringify({ entities: [], events: [] }) })
      const extractor = yield* extractorFrom({ ENGRAM_LLM_BASE_URL: server.url, ENGRAM_LLM_MAX_RETRIES: "0" })
      const text = "Ana: Booked the flights.\n\nBen: I deployed the load balancer this morning."
      yield* extractor.extract({
        title: "ops",
        documentDate: null,
        chunks: [{
          ordinal: 0,
          text,
          speaker: null,
          spokenAt: "2026-02-03T09:00:00.000Z",
          messages: [
            { speaker: "Ana", spokenAt: "2026-02-03T09:00:00.000Z", start: 0, end: 24 },
            { speaker: "Ben", spokenAt: "2026-02-09T08:30:00.000Z", start: 26, end: text.length }
          ]
        }]
      })
      const prompt = server.requests[0]!.messages.map((m) => String(m.content)).join("\n")
      assert.include(prompt, "[2026-02-03T09:00:00.000Z] Ana: Booked the flights.")
      assert.include(prompt, "[2026-02-09T08:30:00.000Z] Ben: I deployed the load balancer this morning.")
    }).pipe(Effect.scoped))

  it.live("a bad answer or a failing model falls back to the rules; extraction never fails", () =>
    Effect.gen(function*() {
      const prose = yield* chatServer({ reply: () => "I cannot help with that." })
      const fromProse = yield* (yield* extractorFrom({ ENGRAM_LLM_BASE_URL: prose.url, ENGRAM_LLM_MAX_RETRIES: "0" }))
        .extract(input)
      assert.strictEqual(fromProse.by, "rules")
      assert.isAbove(fromProse.extraction.entities.length, 0)
      const failing = yield* chatServer({ failFirst: { status: 500, times: 100 } })
      const fromFailure = yield* (yield* extractorFrom({ ENGRAM_LLM_BASE_URL: failing.url, ENGRAM_LLM_MAX_RETRIES: "0" }))
        .extract(input)
      assert.strictEqual(fromFailure.by, "rules")
      // A model endpoint that accepts the request and never answers.
      const silent = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Http.Server>((resolve) => {
            const server = Http.createServer(() => {})
            server.listen(0, "127.0.0.1", () => resolve(server))
          })
        ),
        (server) => Effect.sync(() => server.closeAllConnections()).pipe(Effect.andThen(Effect.sync(() => server.close())))
      )
      const port = (silent.address() as { port: number }).port
      const started = Date.now()
      const fromSlow = yield* (yield* extractorFrom({
        ENGRAM_LLM_BASE_URL: `http://127.0.0.1:${port}/v1`,
        ENGRAM_LLM_MAX_RETRIES: "0",
        ENGRAM_EXTRACT_TIMEOUT_SECONDS: "1"
      })).extract(input)
      assert.strictEqual(fromSlow.by, "rules", "a model slower than the extraction timeout never blocks ingestion")
      assert.isBelow(Date.now() - started, 10_000)
    }).pipe(Effect.scoped))

  it.live("without an LLM the rules extract, and ENGRAM_EXTRACTOR=off extracts nothing", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* extractorFrom({})).name, "rules")
      assert.strictEqual((yield* extractorFrom({ ENGRAM_EXTRACTOR: "llm" })).name, "rules")
      const off = yield* extractorFrom({ ENGRAM_EXTRACTOR: "off" })
      assert.deepStrictEqual((yield* off.extract(input)).extraction, { entities: [], events: [] })
    }).pipe(Effect.scoped))

  it("long documents are sent in batches within the size bound", () => {
    const chunks = Array.from({ length: 10 }, (_, i) => ({
      ordinal: i,
      text: "x".repeat(i === 3 ? llmBatchChars * 2 : 2500),
      speaker: null,
      spokenAt: null
    }))
    const groups = batches(chunks)
    assert.deepStrictEqual(groups.flat().map((c) => c.ordinal), chunks.map((c) => c.ordinal))
    for (const group of groups) {
      assert.isAtMost(group.reduce((sum, c) => sum + c.text.length, 0), llmBatchChars)
    }
  })
})
