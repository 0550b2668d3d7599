import { Context, Effect, Layer, Option } from "effect"
import type { LanguageModel } from "effect/ai"
import { EngramConfig } from "../config.ts"
import { extractiveLanguageModel } from "../llm/extractive.ts"
import { openAiCompatibleLanguageModel } from "../llm/openai.ts"

export { Generation, type GenerationOptions } from "../llm/generation.ts"

export type LlmProvider = "openai-compatible" | "extractive"

/** The answer provider: an OpenAI-compatible LLM when ENGRAM_LLM_BASE_URL is set, else the extractive one. */
export class LlmClient extends Context.Service<LlmClient, {
  readonly provider: LlmProvider
  /** The configured model; null for the extractive provider, which is no model. */
  readonly model: string | null
  readonly languageModel: LanguageModel.LanguageModel
}>()("engram/LlmClient") {
  static readonly layer = Layer.effect(
    LlmClient,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      if (Option.isNone(settings.llmBaseUrl)) {
        yield* Effect.logInfo("no LLM configured (ENGRAM_LLM_BASE_URL): answers are extracted from the sources")
        return LlmClient.of({ provider: "extractive", model: null, languageModel: yield* extractiveLanguageModel })
      }
      // Undici leaves every timeout to ours (Node's fetch would cut a slow answer at 300 s, which looks transient).
      // Imported only here: a service without an LLM never loads it.
      const { layerUndici } = yield* Effect.promise(() => import("@effect/platform-node/NodeHttpClient"))
      // Built in this layer's scope: its connection pool lives as long as the client.
      const undici = yield* Layer.build(layerUndici)
      const languageModel = yield* openAiCompatibleLanguageModel({
        baseUrl: settings.llmBaseUrl.value,
        apiKey: settings.llmApiKey,
        model: settings.llmModel,
        timeout: `${settings.llmTimeoutSeconds} seconds`,
        maxRetries: settings.llmMaxRetries
      }).pipe(Effect.provide(undici))
      yield* Effect.logInfo("LLM configured").pipe(
        Effect.annotateLogs({
          provider: "openai-compatible",
          base_url: settings.llmBaseUrl.value,
          model: settings.llmModel
        })
      )
      return LlmClient.of({ provider: "openai-compatible", model: settings.llmModel, languageModel })
    })
  )
}
