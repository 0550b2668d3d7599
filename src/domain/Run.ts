import { Schema } from "effect"
import { Citation } from "./Agent.ts"
import { Strategy } from "./Search.ts"
import { characters, IdText, Text } from "./Text.ts"

export { Citation }

const Question = Text.check(
  characters(1, 8000),
  Schema.makeFilter((s: string) => s.trim().length >= 1, { message: "must not be empty" })
)

export const AskRequest = Schema.Struct({
  question: Question,
  conversation_id: Schema.optionalKey(IdText).annotate({
    description: "Continue this conversation of the agent: its earlier messages are history, and the question " +
      "and answer are added to it. Omitted: a one-off question."
  }),
  stream: Schema.optionalKey(Schema.Boolean).annotate({
    description: "true: text/event-stream of run.started, retrieval, delta, citations and done (or error) events"
  })
}).annotate({ identifier: "AskRequest" })

export const PostMessageRequest = Schema.Struct({
  content: Question,
  stream: Schema.optionalKey(Schema.Boolean).annotate({ description: "As for ask" })
}).annotate({ identifier: "PostMessageRequest" })

export const RunStatus = Schema.Literals(["running", "completed", "cancelled", "failed"])
export type RunStatus = typeof RunStatus.Type

export const RetrievalTrace = Schema.Struct({
  strategy: Strategy,
  took_ms: Schema.Number,
  searched_source_ids: Schema.Array(Schema.String),
  results: Schema.Int.annotate({ description: "Chunks retrieved (after min_score)" }),
  passages: Schema.Int.annotate({ description: "Chunks given to the answerer (within the context token budget)" }),
  notices: Schema.Array(Schema.String)
}).annotate({ identifier: "RetrievalTrace" })
export type RetrievalTrace = typeof RetrievalTrace.Type

export const RunUsage = Schema.Struct({
  input_tokens: Schema.Int,
  output_tokens: Schema.Int
}).annotate({ identifier: "RunUsage" })
export type RunUsage = typeof RunUsage.Type

export const RunOut = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
  conversation_id: Schema.NullOr(Schema.String),
  question: Schema.String,
  status: RunStatus,
  answer: Schema.String.annotate({ description: "The answer so far (all of it once completed)" }),
  citations: Schema.Array(Citation),
  retrieval: Schema.NullOr(RetrievalTrace),
  usage: Schema.NullOr(RunUsage),
  provider: Schema.String.annotate({
    description: "openai-compatible: a language model wrote the answer; extractive: sentences were selected " +
      "from the sources (no model)"
  }),
  model: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  created_at: Schema.String,
  finished_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "RunOut" })
export type RunOut = typeof RunOut.Type
