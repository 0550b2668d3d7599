import { Schema } from "effect"
import { Citation } from "./Agent.ts"
import { characters, Text } from "./Text.ts"

/** A message content: a string, or text parts (other part kinds are ignored). */
const Content = Schema.Union([
  Text,
  Schema.Array(Schema.Struct({ type: Text, text: Schema.optionalKey(Text) })),
  Schema.Null
])

export const ChatMessage = Schema.Struct({
  role: Schema.Literals(["system", "developer", "user", "assistant", "tool"]),
  content: Schema.optionalKey(Content)
}).annotate({ identifier: "ChatMessage" })
export type ChatMessage = typeof ChatMessage.Type

const StopSequence = Text.check(characters(1, 1000))

const MaxTokens = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 32768 }))

export const ChatCompletionRequest = Schema.Struct({
  model: Schema.optionalKey(Text).annotate({
    description: "Accepted and ignored: the agent in the path decides the model"
  }),
  messages: Schema.Array(ChatMessage).check(Schema.isBetweenLength(1, 500)).annotate({
    description: "The last message must be from the user: it is the question; earlier user and assistant " +
      "messages are history; system (and developer) messages are added after the agent's instructions"
  }),
  stream: Schema.optionalKey(Schema.Boolean).annotate({ description: "Default false" }),
  stream_options: Schema.optionalKey(Schema.NullOr(Schema.Struct({ include_usage: Schema.optionalKey(Schema.Boolean) }))),
  temperature: Schema.optionalKey(Schema.NullOr(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 })))),
  max_tokens: Schema.optionalKey(Schema.NullOr(MaxTokens)),
  max_completion_tokens: Schema.optionalKey(Schema.NullOr(MaxTokens)),
  stop: Schema.optionalKey(Schema.NullOr(Schema.Union([StopSequence, Schema.Array(StopSequence).check(Schema.isMaxLength(4))]))),
  user: Schema.optionalKey(Text)
}).annotate({
  identifier: "ChatCompletionRequest",
  description: "The OpenAI Chat Completions request; fields not listed (n, tools, logprobs, …) are ignored"
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

const Usage = Schema.Struct({ prompt_tokens: Schema.Int, completion_tokens: Schema.Int, total_tokens: Schema.Int })

export const ChatCompletion = Schema.Struct({
  id: Schema.String.annotate({ description: "chatcmpl-<run id>" }),
  object: Schema.Literal("chat.completion"),
  created: Schema.Int,
  model: Schema.String.annotate({ description: "The agent id" }),
  choices: Schema.Array(Schema.Struct({
    index: Schema.Int,
    message: Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.String }),
    finish_reason: Schema.String
  })),
  usage: Usage,
  citations: Schema.Array(Citation).annotate({
    description: "Engram extension: the chunks the answer's [n] markers refer to (SDKs ignore it)"
  })
}).annotate({
  identifier: "ChatCompletion",
  description: "With stream true: text/event-stream of chat.completion.chunk objects (the role first, content " +
    "deltas, finish_reason and citations in the last, a usage chunk when stream_options.include_usage), then " +
    "`data: [DONE]`"
})

export const ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Schema.Struct({
    id: Schema.String,
    object: Schema.Literal("model"),
    created: Schema.Int,
    owned_by: Schema.String
  }))
}).annotate({ identifier: "ModelList" })
