import type { Tracer } from "effect"

// The attribute names of OpenTelemetry's semantic conventions this module sets, written out as their maintainers
// advise for the incubating ones: the package's entry points load 1.6 MB of source for a dozen names
// (test/observability/semconv.test.ts checks each against the package).
export const ATTR_ERROR_TYPE = "error.type"
export const ATTR_SERVER_ADDRESS = "server.address"
export const ATTR_SERVER_PORT = "server.port"
export const ATTR_GEN_AI_EMBEDDINGS_DIMENSION_COUNT = "gen_ai.embeddings.dimension.count"
export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
export const ATTR_GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
export const ATTR_GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
export const ATTR_GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
export const ATTR_GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"
export const ATTR_GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
export const ATTR_GEN_AI_RESPONSE_ID = "gen_ai.response.id"
export const ATTR_GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

/**
 * One call to a model, described by the OpenTelemetry GenAI semantic conventions: ids, names and counts only —
 * never a prompt, a completion, an input text or a key.
 */
export interface ModelCall {
  readonly operation: "chat" | "embeddings"
  /** gen_ai.provider.name: "openai" for any OpenAI-compatible API (server.address tells which one). */
  readonly provider: string
  readonly model: string
  /** The URL called, for server.address and server.port; none for a model run in-process. */
  readonly url?: string
  readonly temperature?: number
  readonly maxTokens?: number
  readonly stream?: boolean
  /** Of the embeddings asked for. */
  readonly dimensions?: number
}

export interface ModelAnswer {
  readonly id?: string | null
  readonly model?: string | null
  readonly finishReasons?: ReadonlyArray<string>
  readonly inputTokens?: number | null
  readonly outputTokens?: number | null
}

type Attributes = Record<string, string | number | boolean | ReadonlyArray<string>>

const defined = (entries: Record<string, unknown>): Attributes =>
  Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined && value !== null)) as Attributes

const serverOf = (url: string | undefined) => {
  if (url === undefined) return {}
  const parsed = new URL(url)
  const port = parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port)
  return { [ATTR_SERVER_ADDRESS]: parsed.hostname, [ATTR_SERVER_PORT]: port }
}

/** The span of a model call: named `{operation} {model}`, a client span when the model is remote. */
export const modelCallSpan = (call: ModelCall): readonly [string, Tracer.SpanOptions] => [
  `${call.operation} ${call.model}`,
  {
    kind: call.url === undefined ? "internal" : "client",
    attributes: defined({
      [ATTR_GEN_AI_OPERATION_NAME]: call.operation,
      [ATTR_GEN_AI_PROVIDER_NAME]: call.provider,
      [ATTR_GEN_AI_REQUEST_MODEL]: call.model,
      [ATTR_GEN_AI_REQUEST_TEMPERATURE]: call.temperature,
      [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: call.maxTokens,
      [ATTR_GEN_AI_REQUEST_STREAM]: call.stream,
      [ATTR_GEN_AI_EMBEDDINGS_DIMENSION_COUNT]: call.dimensions,
      ...serverOf(call.url)
    })
  }
]

/** What the model answered, as span attributes (what it did not report is left out). */
export const modelAnswerAttributes = (answer: ModelAnswer): Attributes =>
  defined({
    [ATTR_GEN_AI_RESPONSE_ID]: answer.id,
    [ATTR_GEN_AI_RESPONSE_MODEL]: answer.model,
    [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: answer.finishReasons,
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: answer.inputTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: answer.outputTokens
  })

/** error.type of a failed call: the class of failure (an AiError reason's tag, say), never its message. */
export const modelErrorAttributes = (errorType: string): Attributes => ({ [ATTR_ERROR_TYPE]: errorType })
