import { Context, Effect, Layer, Semaphore } from "effect"
import { EngramConfig } from "../config.ts"
import { chunksWithin, coverageOf, type ExtractionCoverage } from "../extract/budget.ts"
import type { Extraction, ExtractionInput } from "../extract/Extraction.ts"
import { extractWithModel } from "../extract/llm.ts"
import { IngestThreads } from "./IngestThreads.ts"
import { LlmClient } from "./LlmClient.ts"

export type ExtractorName = "rules" | "llm" | "off"

/** What one extraction found, by which extractor, and how much of the document it read (null when off). */
export interface ExtractorResult {
  readonly extraction: Extraction
  readonly by: ExtractorName
  readonly coverage: ExtractionCoverage | null
}

const nothing: Extraction = { entities: [], events: [] }

/**
 * Finds a document's entities and events (ENGRAM_EXTRACTOR): the rule-based extractor by default, on a worker
 * thread; the configured language model when there is one (auto) or when asked (llm), a bounded number of calls
 * at a time, falling back to the rules when the model fails, answers badly or takes longer than
 * ENGRAM_EXTRACT_TIMEOUT_SECONDS — so extraction never blocks ingestion. "off" extracts nothing.
 * Budget: either reads at most ENGRAM_EXTRACT_MAX_CHARS characters of the chunks, in order; the rules parse no
 * further chunk after ENGRAM_EXTRACT_TIMEOUT_SECONDS and their thread is stopped at twice that. The coverage
 * says what was read and why it stopped.
 */
export class Extractor extends Context.Service<Extractor, {
  readonly name: ExtractorName
  readonly extract: (input: ExtractionInput) => Effect.Effect<ExtractorResult>
}>()("engram/Extractor") {
  static readonly layer = Layer.effect(
    Extractor,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const llm = yield* LlmClient
      const threads = yield* IngestThreads
      const limitMillis = settings.extractTimeoutSeconds * 1000
      const withinBudget = (input: ExtractionInput): ExtractionInput => ({
        ...input,
        chunks: chunksWithin(input.chunks, settings.extractMaxChars)
      })

      /** The rules over `read` (the budgeted part of `whole`). */
      const rules = (whole: ExtractionInput, read: ExtractionInput): Effect.Effect<ExtractorResult> =>
        threads.run({ kind: "extract", input: read, milliseconds: limitMillis }, 2 * limitMillis + 1000).pipe(
          Effect.map(({ extraction, chunksRead }) => ({
            extraction,
            by: "rules" as const,
            coverage: coverageOf(
              whole.chunks,
              read.chunks.slice(0, chunksRead),
              chunksRead < read.chunks.length ? "time_limit" : null
            )
          })),
          // A document the rules cannot handle yields no events rather than failing ingestion.
          Effect.catch((error) =>
            Effect.logWarning("rule extraction stopped", error.message).pipe(
              Effect.as({
                extraction: nothing,
                by: "rules" as const,
                coverage: coverageOf(whole.chunks, [], error.reason === "timeout" ? "time_limit" : "failed")
              })
            )
          )
        )

      if (settings.extractor === "off") {
        return Extractor.of({
          name: "off",
          extract: () => Effect.succeed({ extraction: nothing, by: "off" as const, coverage: null })
        })
      }
      if (settings.extractor === "rules" || llm.provider !== "openai-compatible") {
        if (settings.extractor === "llm") {
          yield* Effect.logWarning("ENGRAM_EXTRACTOR=llm but no LLM is configured (ENGRAM_LLM_BASE_URL): using the rules")
        }
        return Extractor.of({ name: "rules", extract: (input) => rules(input, withinBudget(input)) })
      }
      const permits = yield* Semaphore.make(settings.extractLlmConcurrency)
      return Extractor.of({
        name: "llm",
        extract: (input) => {
          const read = withinBudget(input)
          return permits.withPermits(1)(extractWithModel(llm.languageModel, read, settings.extractLlmMaxCalls)).pipe(
            Effect.timeoutOrElse({
              duration: `${settings.extractTimeoutSeconds} seconds`,
              orElse: () => Effect.fail(`no answer within ${settings.extractTimeoutSeconds} s`)
            }),
            Effect.map((extraction): ExtractorResult => ({
              extraction,
              by: "llm",
              coverage: coverageOf(input.chunks, read.chunks, null)
            })),
            Effect.catch((reason: string) =>
              Effect.logWarning("LLM extraction failed, using the rules", reason).pipe(
                Effect.andThen(rules(input, read))
              )
            )
          )
        }
      })
    })
  )
}
