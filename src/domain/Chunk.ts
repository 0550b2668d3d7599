import { Schema } from "effect"

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
  speaker: Schema.NullOr(Schema.String),
  spoken_at: Schema.NullOr(Schema.String)
}) {}
