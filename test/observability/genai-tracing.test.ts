import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { chatServer, type ChatRequestBody, countTokens, messageText } from "../support/chatServer.ts"
import { embeddingServer } from "../support/embeddingServer.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { ancestorsOf, otlpReceiver, type ReceivedSpan, waitFor } from "../support/otlp.ts"
import { listeningUrl, spawnEngram } from "../support/process.ts"
import { scratchDir } from "../support/server.ts"

const clientKind = 3
const promptTokens = (body: ChatRequestBody) =>
  body.messages.reduce((sum, message) => sum + countTokens(messageText(message)), 0)
const byStart = (a: ReceivedSpan, b: ReceivedSpan) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano))

describe("GenAI spans over OTLP/HTTP", () => {
  it.effect("each LLM and embedding call is a span with the GenAI attributes, in the trace of its request", () =>
    Effect.scoped(Effect.gen(function*() {
      const collector = yield* otlpReceiver
      const llmKey = "sk-llm-5e1c9d7a0b"
      const embedKey = "sk-embed-77f0a2c4d1"
      // The first chat call (the first document's extraction) is refused, so a failed call is traced too.
      const llm = yield* chatServer({ apiKey: llmKey, failFirst: { status: 400, times: 1 } })
      const embeddings = yield* embeddingServer
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_PORT: "0",
        ENGRAM_LLM_BASE_URL: llm.url,
        ENGRAM_LLM_API_KEY: llmKey,
        ENGRAM_LLM_MODEL: "stand-in-chat",
        ENGRAM_EXTRACTOR: "llm",
        ENGRAM_EMBED_BASE_URL: embeddings.url,
        ENGRAM_EMBED_API_KEY: embedKey,
        ENGRAM_EMBED_MODEL: "stand-in-embed",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_BSP_SCHEDULE_DELAY: "100"
      })
      const url = yield* listeningUrl(engram)
      const token = yield* login(url, "Grace")
      const source = yield* createSource(url, token)
      const first = yield* ingestText(url, token, source, "Logbook", "Grace Hopper taped a moth into the Mark II log.")
      yield* waitForDocument(url, token, source, first.body.id)
      const second = yield* ingestText(url, token, source, "Compiler", "The A-0 system translated symbolic code in 1952.")
      yield* waitForDocument(url, token, source, second.body.id)
      const agent = yield* request(url, "/api/v1/agents", {
        token,
        json: { name: "Archivist", instructions: "Answer briefly.", source_ids: [source] }
      })
      assert.strictEqual(agent.status, 201, agent.text)
      const question = "Which insect ended up taped into the logbook?"
      const asked = yield* request(url, `/api/v1/agents/${agent.body.id}/ask`, { token, json: { question } })
      assert.strictEqual(asked.status, 200, asked.text)
      assert.strictEqual(asked.body.status, "completed")
      const streamedQuestion = "When did symbolic code first get translated?"
      const streamed = yield* request(url, `/api/v1/agents/${agent.body.id}/ask`, {
        token,
        json: { question: streamedQuestion, stream: true }
      })
      assert.strictEqual(streamed.status, 200)
      assert.include(streamed.text, "event: done")

      const chatSpans = yield* waitFor(() => {
        const found = collector.spans.filter((span) => span.name === "chat stand-in-chat")
        return found.length === 4 ? found.sort(byStart) : undefined
      }, "four chat spans")
      assert.strictEqual(llm.requests.length, 4)
      for (const span of chatSpans) {
        assert.strictEqual(span.kind, clientKind)
        assert.strictEqual(span.attributes["gen_ai.operation.name"], "chat")
        assert.strictEqual(span.attributes["gen_ai.provider.name"], "openai")
        assert.strictEqual(span.attributes["gen_ai.request.model"], "stand-in-chat")
        assert.strictEqual(span.attributes["server.address"], "127.0.0.1")
        assert.strictEqual(span.attributes["server.port"], Number(new URL(llm.url).port))
      }
      const [refused, extraction, answer, streamedAnswer] = chatSpans as [ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan]

      // The refused call: error.type, status error, no usage.
      assert.strictEqual(refused.attributes["error.type"], "InvalidRequestError")
      assert.strictEqual(refused.status?.code, 2)
      assert.notProperty(refused.attributes, "gen_ai.usage.input_tokens")

      // The extraction of the second document: a non-streamed call inside its ingestion job.
      assert.strictEqual(extraction.attributes["gen_ai.request.stream"], false)
      assert.strictEqual(extraction.attributes["gen_ai.response.model"], "stand-in-chat")
      assert.match(String(extraction.attributes["gen_ai.response.id"]), /^chatcmpl-/)
      assert.deepStrictEqual(extraction.attributes["gen_ai.response.finish_reasons"], ["stop"])
      assert.strictEqual(extraction.attributes["gen_ai.usage.input_tokens"], promptTokens(llm.requests[1]!))
      assert.isAbove(Number(extraction.attributes["gen_ai.usage.output_tokens"]), 0)
      // Spans are exported as they end, in batches: parents that end later may arrive later.
      const job = yield* waitFor(
        () => ancestorsOf(collector.spans, extraction).find((span) => span.name === "engram.job.ingest"),
        "the extraction's job span"
      )
      assert.strictEqual(job!.attributes["engram.document.id"], second.body.id)

      // The answers: streamed calls, usage from the last chunk, each in the trace of its POST /ask.
      for (const [span, body, run] of [[answer, llm.requests[2]!, asked.body], [streamedAnswer, llm.requests[3]!, null]] as const) {
        assert.strictEqual(body.stream, true)
        assert.strictEqual(span.attributes["gen_ai.request.stream"], true)
        assert.strictEqual(span.attributes["gen_ai.response.model"], "stand-in-chat")
        assert.deepStrictEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"])
        assert.strictEqual(span.attributes["gen_ai.usage.input_tokens"], promptTokens(body))
        assert.isAbove(Number(span.attributes["gen_ai.usage.output_tokens"]), 0)
        if (run !== null) {
          assert.strictEqual(span.attributes["gen_ai.usage.input_tokens"], run.usage.input_tokens)
          assert.strictEqual(span.attributes["gen_ai.usage.output_tokens"], run.usage.output_tokens)
        }
        const root = yield* waitFor(() => {
          const top = ancestorsOf(collector.spans, span).at(-1)
          return top !== undefined && (top.parentSpanId === undefined || top.parentSpanId === "") ? top : undefined
        }, "the ask's request span")
        assert.strictEqual(root!.attributes["http.request.method"], "POST")
        assert.include(String(root!.attributes["http.route"]), "/ask")
      }
      assert.notStrictEqual(answer.traceId, streamedAnswer.traceId)

      // Every embedding call (the two documents, the two questions) is a span with the tokens the provider counted.
      const embeddingCalls = embeddings.requests.slice(1) // the first is the start-up probe, outside any span
      const embeddingSpans = yield* waitFor(() => {
        const found = collector.spans.filter((span) => span.name === "embeddings stand-in-embed")
        return found.length === embeddingCalls.length ? found.sort(byStart) : undefined
      }, "a span per embedding call")
      assert.isAtLeast(embeddingSpans.length, 4)
      assert.deepStrictEqual(
        embeddingSpans.map((span) => span.attributes["gen_ai.usage.input_tokens"]),
        embeddingCalls.map((call) => call.tokens)
      )
      for (const span of embeddingSpans) {
        assert.strictEqual(span.kind, clientKind)
        assert.strictEqual(span.attributes["gen_ai.operation.name"], "embeddings")
        assert.strictEqual(span.attributes["gen_ai.provider.name"], "openai")
        assert.strictEqual(span.attributes["gen_ai.request.model"], "stand-in-embed")
        assert.isAbove(Number(span.attributes["gen_ai.embeddings.dimension.count"]), 0)
      }

      // No key, question, document text or answer in anything exported.
      const everything = collector.bodies.join("\n")
      for (const secret of [llmKey, embedKey, token, question, streamedQuestion, "taped a moth", "stand-in reply"]) {
        assert.notInclude(everything, secret)
      }
    })), 240_000)
})
