import { Context, Effect, Layer, Semaphore } from "effect"
import { Worker } from "node:worker_threads"
import { EngramConfig } from "../config.ts"
import type { Extraction, ExtractionInput } from "../extract/Extraction.ts"
import { extractWithModel } from "../extract/llm.ts"
import { extractRules } from "../extract/rules.ts"
import { LlmClient } from "./LlmClient.ts"

export type ExtractorName = "rules" | "llm" | "off"

/**
 * The rule-based extractor on its own worker thread (compromise takes about 2 ms a sentence, which would stall
 * the HTTP server on a long document), one document at a time; in this thread if the worker cannot start.
 */
const rulesThread = Effect.gen(function*() {
  const worker = yield* Effect.acquireRelease(
    Effect.sync(() => {
      try {
        const thread = new Worker(new URL("../extract/worker.ts", import.meta.url))
        thread.unref()
        return thread
      } catch {
        return null
      }
    }),
    (thread) => Effect.promise(async () => void (await thread?.terminate()))
  )
  const oneAtATime = yield* Semaphore.make(1)
  let next = 0
  return (input: ExtractionInput): Effect.Effect<Extraction> =>
    worker === null
      ? Effect.sync(() => extractRules(input))
      : oneAtATime.withPermits(1)(
        Effect.callback<Extraction>((resume) => {
          const id = next++
          const detach = () => {
            worker.off("message", onMessage)
            worker.off("exit", onExit)
          }
          const onMessage = (reply: { id: number; extraction?: Extraction; error?: string }) => {
            if (reply.id !== id) return
            detach()
            // A document the rules cannot handle yields no events rather than failing ingestion.
            resume(Effect.succeed(reply.extraction ?? { entities: [], events: [] }))
          }
          // The worker died: extract here instead.
          const onExit = () => {
            detach()
            resume(Effect.sync(() => extractRules(input)))
          }
          worker.on("message", onMessage)
          worker.once("exit", onExit)
          worker.postMessage({ id, input })
          return Effect.sync(detach)
        })
      )
})

/**
 * Finds a document's entities and events (ENGRAM_EXTRACTOR): the rule-based extractor by default; the configured
 * language model when there is one (auto) or when asked (llm), a bounded number of calls at a time, falling back
 * to the rules when the model fails, answers badly or takes longer than ENGRAM_EXTRACT_TIMEOUT_SECONDS — so
 * extraction never blocks ingestion. "off" extracts nothing.
 */
export class Extractor extends Context.Service<Extractor, {
  readonly name: ExtractorName
  readonly extract: (input: ExtractionInput) => Effect.Effect<{ readonly extraction: Extraction; readonly by: ExtractorName }>
}>()("engram/Extractor") {
  static readonly layer = Layer.effect(
    Extractor,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const llm = yield* LlmClient
      const thread = yield* rulesThread
      const rules = (input: ExtractionInput) => Effect.map(thread(input), (extraction) => ({ extraction, by: "rules" as const }))
      if (settings.extractor === "off") {
        return Extractor.of({
          name: "off",
          extract: () => Effect.succeed({ extraction: { entities: [], events: [] }, by: "off" as const })
        })
      }
      if (settings.extractor === "rules" || llm.provider !== "openai-compatible") {
        if (settings.extractor === "llm") {
          yield* Effect.logWarning("ENGRAM_EXTRACTOR=llm but no LLM is configured (ENGRAM_LLM_BASE_URL): using the rules")
        }
        return Extractor.of({ name: "rules", extract: rules })
      }
      const permits = yield* Semaphore.make(settings.extractLlmConcurrency)
      return Extractor.of({
        name: "llm",
        extract: (input) =>
          permits.withPermits(1)(extractWithModel(llm.languageModel, input, settings.extractLlmMaxCalls)).pipe(
            Effect.timeoutOrElse({
              duration: `${settings.extractTimeoutSeconds} seconds`,
              orElse: () => Effect.fail(`no answer within ${settings.extractTimeoutSeconds} s`)
            }),
            Effect.map((extraction) => ({ extraction, by: "llm" as const })),
            Effect.catch((reason: string) =>
              Effect.logWarning("LLM extraction failed, using the rules", reason).pipe(Effect.andThen(rules(input)))
            )
          )
      })
    })
  )
}
