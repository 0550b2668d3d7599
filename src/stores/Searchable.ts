import type { SqlClient, Statement } from "effect/sql"
import type { ChunkMessage } from "../domain/Chunk.ts"

/**
 * The one rule for what search sees: a ready document, in its active version. `document` is the alias of the
 * documents row, `version` the version column of the derived row (chunk, event, mention) joined to it.
 * The Lifecycle service keeps it true: only its transitions change status or active_version.
 */
export const searchable = (sql: SqlClient.SqlClient, document: string, version: string): Statement.Fragment =>
  sql.literal(`${document}.active_version = ${version} AND ${document}.status = 'ready'`)

/** A chunk as search returns it: the row its results are made of. */
export interface SearchableChunk {
  readonly id: string
  readonly document_id: string
  readonly source_id: string
  readonly document_title: string
  readonly text: string
  readonly section_path: ReadonlyArray<string>
  readonly char_start: number
  readonly char_end: number
  readonly speaker: string | null
  readonly spoken_at: Date | null
  readonly spoken_until: Date | null
  readonly messages: ReadonlyArray<ChunkMessage>
  /** Its near-duplicate key (`nearDuplicateKey`); null for chunks written before keys were. Never in a response. */
  readonly near_key: Uint8Array | null
}

/** The columns of a SearchableChunk, from a chunk `c` joined to its document `d`. */
export const searchableChunkColumns = (sql: SqlClient.SqlClient): Statement.Fragment =>
  sql.literal(
    "c.id, c.document_id, c.source_id, d.title AS document_title, c.text, c.section_path, c.char_start, " +
      "c.char_end, c.speaker, c.spoken_at, c.spoken_until, c.messages, c.near_key"
  )
