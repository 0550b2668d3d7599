import { Effect, Schema } from "effect"
import { ChunkMessages } from "./Chunk.ts"
import { Strategy } from "./Search.ts"
import { characters, IdText, Text, trimmedTextOf } from "./Text.ts"

export const AgentId = Schema.String.pipe(Schema.brand("AgentId"))
export type AgentId = typeof AgentId.Type

export const ConversationId = Schema.String.pipe(Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type

const Id = IdText

export const AgentName = trimmedTextOf(1, 200)

export const AgentDescription = Text.check(characters(0, 2000))

export const AgentInstructions = Text.check(characters(0, 20_000)).annotate({ description: "The system prompt the agent answers under; at most 20,000 characters (default empty)" })

const Temperature = Schema.Finite.check(
  Schema.isBetween({ minimum: 0, maximum: 2 }, { message: "must be a number from 0 to 2" })
)

const MaxTokens = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 32_768 }, { message: "must be an integer from 1 to 32768" })
)

const ModelName = Text.check(characters(1, 200))

const TopK = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 50 }, { message: "must be an integer from 1 to 50" })
)

const MinScore = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0, { message: "must be a number of at least 0" }))

const SourceIds = Schema.Array(Id).check(Schema.isMaxLength(256, { message: "must have at most 256 ids" }))

/** Every field is an override: null (or absent) falls back to the caller's model settings, then the provider's. */
export const AgentModelSettings = Schema.Struct({
  temperature: Schema.optionalKey(Schema.NullOr(Temperature)).annotate({
    description: "0 to 2; null: the caller's model settings (GET /system/model-settings), else the provider default"
  }),
  max_tokens: Schema.optionalKey(Schema.NullOr(MaxTokens)).annotate({
    description: "1 to 32768; null: the caller's model settings, else the provider default"
  }),
  model: Schema.optionalKey(Schema.NullOr(ModelName)).annotate({
    description: "A model name at the configured endpoint, overriding the caller's llm_model and ENGRAM_LLM_MODEL; " +
      "null: no override"
  })
}).annotate({ identifier: "AgentModelSettings" })
export type AgentModelSettings = typeof AgentModelSettings.Type

export const AgentRetrievalSettings = Schema.Struct({
  strategy: Schema.optionalKey(Strategy).annotate({ description: "vector, lexical or multi (default multi)" }),
  top_k: Schema.optionalKey(TopK).annotate({ description: "Chunks retrieved per question, 1 to 50 (default 8)" }),
  min_score: Schema.optionalKey(MinScore).annotate({
    description: "Results scoring below are dropped (default 0: keep all). The score is the strategy's own: " +
      "cosine similarity (vector), BM25 (lexical), fused RRF or reranker relevance (multi)"
  })
}).annotate({ identifier: "AgentRetrievalSettings" })
export type AgentRetrievalSettings = typeof AgentRetrievalSettings.Type

export const AgentCreate = Schema.Struct({
  name: AgentName.annotate({ description: "1 to 200 characters after trimming" }),
  description: Schema.optionalKey(Schema.NullOr(AgentDescription)).annotate({ description: "At most 2000 characters" }),
  instructions: Schema.optionalKey(AgentInstructions),
  model_settings: Schema.optionalKey(AgentModelSettings),
  retrieval_settings: Schema.optionalKey(AgentRetrievalSettings),
  source_ids: Schema.optionalKey(SourceIds).annotate({
    description: "The sources the agent may search (at most 256; default none). A source you do not own is 404."
  })
}).annotate({ identifier: "AgentCreate" })
export type AgentCreate = typeof AgentCreate.Type

export const AgentUpdate = Schema.Struct({
  name: Schema.optionalKey(AgentName),
  description: Schema.optionalKey(Schema.NullOr(AgentDescription)).annotate({ description: "null clears it" }),
  instructions: Schema.optionalKey(AgentInstructions),
  model_settings: Schema.optionalKey(AgentModelSettings).annotate({
    description: "Merged field by field: absent fields keep their value, null clears an override"
  }),
  retrieval_settings: Schema.optionalKey(AgentRetrievalSettings).annotate({
    description: "Merged field by field: absent fields keep their value"
  }),
  source_ids: Schema.optionalKey(SourceIds).annotate({
    description: "Replaces the bindings, like PUT /agents/{id}/bindings"
  })
}).annotate({ identifier: "AgentUpdate" })
export type AgentUpdate = typeof AgentUpdate.Type

/** Settings as stored and returned: every field present. */
export const AgentModelSettingsOut = Schema.Struct({
  temperature: Schema.NullOr(Schema.Number),
  max_tokens: Schema.NullOr(Schema.Int),
  model: Schema.NullOr(Schema.String)
}).annotate({
  identifier: "AgentModelSettingsOut",
  description: "null: not overridden (the caller's model settings apply, then the provider default)"
})
export type AgentModelSettingsOut = typeof AgentModelSettingsOut.Type

export const AgentRetrievalSettingsOut = Schema.Struct({
  strategy: Strategy,
  top_k: Schema.Int,
  min_score: Schema.Number
}).annotate({ identifier: "AgentRetrievalSettingsOut" })
export type AgentRetrievalSettingsOut = typeof AgentRetrievalSettingsOut.Type

export const defaultModelSettings: AgentModelSettingsOut = { temperature: null, max_tokens: null, model: null }

export const defaultRetrievalSettings: AgentRetrievalSettingsOut = { strategy: "multi", top_k: 8, min_score: 0 }

export class AgentOut extends Schema.Class<AgentOut>("AgentOut")({
  id: AgentId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  instructions: Schema.String,
  model_settings: AgentModelSettingsOut,
  retrieval_settings: AgentRetrievalSettingsOut,
  source_ids: Schema.Array(Schema.String).annotate({ description: "The bound sources, sorted" }),
  created_at: Schema.String,
  updated_at: Schema.String
}) {}

export const Bindings = Schema.Struct({
  source_ids: SourceIds.annotate({
    description: "At most 256; repeated ids count once; returned sorted. A source you do not own is 404."
  })
}).annotate({ identifier: "AgentBindings" })
export type Bindings = typeof Bindings.Type

export const ConversationTitle = trimmedTextOf(1, 200)

export const ConversationCreate = Schema.Struct({
  title: Schema.optionalKey(Schema.NullOr(ConversationTitle)).annotate({
    description: "1 to 200 characters after trimming; absent or null: untitled"
  })
}).annotate({ identifier: "ConversationCreate" })
export type ConversationCreate = typeof ConversationCreate.Type

export class ConversationOut extends Schema.Class<ConversationOut>("ConversationOut")({
  id: ConversationId,
  agent_id: AgentId,
  title: Schema.NullOr(Schema.String),
  message_count: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.String.annotate({ description: "The time of the last message (or of creation)" })
}) {}

export const MessageRole = Schema.Literals(["user", "assistant"])
export type MessageRole = typeof MessageRole.Type

/** A numbered reference from an answer (`[n]`) to the retrieved chunk it quotes. */
export const Citation = Schema.Struct({
  n: Schema.Int.annotate({ description: "The number the answer cites it by, from 1" }),
  chunk_id: Schema.String,
  document_id: Schema.String,
  source_id: Schema.String,
  title: Schema.String.annotate({ description: "The document's title" }),
  quote: Schema.String.annotate({ description: "The cited chunk's text (at most 500 characters)" }),
  ...ChunkMessages
}).annotate({ identifier: "Citation" })
export type Citation = typeof Citation.Type

/** A citation as stored with a run or message: those recorded before chats kept their messages lack the chat fields. */
export const StoredCitation = Schema.Struct({
  ...Citation.fields,
  speaker: ChunkMessages.speaker.pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  spoken_at: ChunkMessages.spoken_at.pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  spoken_until: ChunkMessages.spoken_until.pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  messages: ChunkMessages.messages.pipe(Schema.withDecodingDefaultKey(Effect.succeed([])))
})

export class MessageOut extends Schema.Class<MessageOut>("MessageOut")({
  id: Schema.String,
  conversation_id: ConversationId,
  role: MessageRole,
  content: Schema.String,
  run_id: Schema.NullOr(Schema.String).annotate({ description: "The run that produced or answered this message" }),
  citations: Schema.Array(Citation).annotate({ description: "Empty for user messages" }),
  created_at: Schema.String
}) {}
