import { Schema } from "effect"

export const ChunkMessage = Schema.Struct({
  speaker: Schema.String,
  spoken_at: Schema.NullOr(Schema.String).annotate({
    description: "When it was sent (ISO-8601 UTC): its own timestamp, else the previous message's, else the " +
      "document's date; null when none of these is known"
  }),
  char_start: Schema.Int.annotate({ description: "Offset in the document's extracted text, like the chunk's" }),
  char_end: Schema.Int
}).annotate({
  identifier: "ChunkMessage",
  description: "One chat message in a chunk (or the part of it the chunk holds, when a long message is split)"
})
export type ChunkMessage = typeof ChunkMessage.Type

/** The chat fields of a chunk, a search result and a citation. */
export const ChunkMessages = {
  speaker: Schema.NullOr(Schema.String).annotate({
    description: "The speaker of every message of the chunk; null when it holds several speakers' messages or none"
  }),
  spoken_at: Schema.NullOr(Schema.String).annotate({ description: "The time of the chunk's earliest message" }),
  spoken_until: Schema.NullOr(Schema.String).annotate({ description: "The time of the chunk's latest message" }),
  messages: Schema.Array(ChunkMessage).annotate({
    description: "The chat messages the chunk holds, in order, each with its speaker and time; empty for other text"
  })
}

export class ChunkOut extends Schema.Class<ChunkOut>("ChunkOut")({
  id: Schema.String,
  document_id: Schema.String,
  source_id: Schema.String,
  ordinal: Schema.Int,
  text: Schema.String,
  token_count: Schema.Int.annotate({ description: "Approximate tokens: words and punctuation marks" }),
  section_path: Schema.Array(Schema.String),
  char_start: Schema.Int.annotate({ description: "Offset in the document's extracted text" }),
  char_end: Schema.Int,
  ...ChunkMessages
}) {}
