import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, References } from "effect"
import { EngramConfig } from "../../src/config.ts"
import { Generation, LlmClient } from "../../src/adapters/LlmClient.ts"
import { chatServer } from "../support/chatServer.ts"

/** LlmClient built from these environment variables, as at start-up. */
const clientFrom = (env: Record<string, string>) =>
  Layer.build(LlmClient.layer.pipe(
    Layer.provide(EngramConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
  )).pipe(
    Effect.map((context) => Context.get(context, LlmClient)),
    Effect.provideService(References.MinimumLogLevel, "None")
  )

describe("LlmClient", () => {
  it.live("without ENGRAM_LLM_BASE_URL the extractive provider answers, with no model", () =>
    Effect.gen(function*() {
      const llm = yield* clientFrom({})
      assert.strictEqual(llm.provider, "extractive")
      assert.isNull(llm.model)
      const response = yield* llm.languageModel.generateText({ prompt: "Anything?" })
      assert.strictEqual(response.text, "The sources do not contain an answer to this question.")
    }).pipe(Effect.scoped))

  it.live("with ENGRAM_LLM_BASE_URL the openai-compatible provider answers with the configured model and key", () =>
    Effect.gen(function*() {
      const server = yield* chatServer({ apiKey: "sk-configured" })
      const llm = yield* clientFrom({
        ENGRAM_LLM_BASE_URL: server.url,
        ENGRAM_LLM_API_KEY: "sk-configured",
        ENGRAM_LLM_MODEL: "configured-model",
        ENGRAM_LLM_TIMEOUT_SECONDS: "10",
        ENGRAM_LLM_MAX_RETRIES: "0"
      })
      assert.strictEqual(llm.provider, "openai-compatible")
      assert.strictEqual(llm.model, "configured-model")
      const response = yield* llm.languageModel.generateText({ prompt: "Ping" }).pipe(
        Effect.provideService(Generation, { temperature: 0.5 })
      )
      assert.strictEqual(response.text, "This is a stand-in reply to: Ping")
      assert.deepInclude(server.requests[0], { model: "configured-model", temperature: 0.5 })
    }).pipe(Effect.scoped))

  it.effect("settings are validated", () =>
    Effect.gen(function*() {
      const error = yield* clientFrom({ ENGRAM_LLM_BASE_URL: "localhost:11434" }).pipe(Effect.scoped, Effect.flip)
      assert.include(String(error), "ENGRAM_LLM_BASE_URL")
      const defaults = yield* Effect.provide(
        Effect.gen(function*() {
          return yield* EngramConfig
        }),
        EngramConfig.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({}))))
      )
      assert.deepInclude(defaults, {
        llmModel: "gpt-4o-mini",
        llmTimeoutSeconds: 120,
        llmMaxRetries: 2,
        answerContextTokens: 3000,
        universeSettleMs: 2000
      })
    }))
})
