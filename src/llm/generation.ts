import { Context } from "effect"

export interface GenerationOptions {
  readonly temperature?: number
  readonly maxTokens?: number
  /** Overrides the configured model for this request (openai-compatible only). */
  readonly model?: string
  readonly stop?: ReadonlyArray<string>
}

/**
 * Per-request generation options, read by the providers inside generateText/streamText. Provide it around the
 * call: `Effect.provideService(Generation, {...})` or `Stream.provideService(Generation, {...})`.
 */
export const Generation = Context.Reference<GenerationOptions>("engram/llm/Generation", {
  defaultValue: () => ({})
})
