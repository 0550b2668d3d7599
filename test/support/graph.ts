import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { ExtractedEntity, ExtractedEvent, Extraction, TimeValue } from "../../src/extract/Extraction.ts"
import { Graph } from "../../src/stores/Graph.ts"
import { markUniverseChanged } from "../../src/stores/Universe.ts"
import { TestServer } from "./server.ts"

/**
 * A document with chunks written straight into the tables, as the pipeline leaves it after the chunk stage
 * (status processing, no active version) or after index (ready, `version` active). No job runs for it.
 */
export const seedDocument = (
  sourceId: string,
  title: string,
  chunks: ReadonlyArray<string>,
  options: { readonly version?: number; readonly ready?: boolean } = {}
) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const version = options.version ?? 1
    const ready = options.ready ?? true
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO documents (source_id, title, kind, format, mime_type, size_bytes, content_hash, status)
      VALUES (${sourceId}, ${title}, 'text', 'text', 'text/plain', 10, ${randomBytes(16).toString("hex")},
        'processing')
      RETURNING id`
    yield* addChunks(row!.id, version, chunks)
    if (ready) yield* makeReady(row!.id, version)
    return row!.id
  })

/**
 * A fresh ready document of the source with `extraction` stored for its chunks and activated, its source's universe
 * marked changed, as Lifecycle's activation does; answers its id.
 */
export const storeActiveDocument = (
  sourceId: string,
  title: string,
  chunks: ReadonlyArray<string>,
  extraction: Extraction
) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const graph = yield* Graph
    const documentId = yield* seedDocument(sourceId, title, chunks)
    yield* graph.store(documentId, 1, extraction)
    yield* graph.activate(documentId, 1)
    yield* markUniverseChanged(sql, sourceId)
    return documentId
  })

/** The chunks of a document version, as the chunk stage writes them. */
export const addChunks = (documentId: string, version: number, chunks: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    let offset = 0
    for (const [ordinal, text] of chunks.entries()) {
      yield* sql`
        INSERT INTO chunks (document_id, source_id, version, ordinal, text, token_count, section_path, char_start,
          char_end)
        SELECT ${documentId}, source_id, ${version}, ${ordinal}, ${text}, ${text.split(" ").length}, '[]'::jsonb,
          ${offset}, ${offset + text.length}
        FROM documents WHERE id = ${documentId}`
      offset += text.length + 2
    }
  })

/** What Lifecycle's activation does to make a version the searchable one (without the chunk clean-up). */
export const makeReady = (documentId: string, version: number) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    yield* sql`
      UPDATE documents SET active_version = ${version}, status = 'ready', ready_at = now(),
        chunk_count = (SELECT count(*) FROM chunks WHERE document_id = ${documentId} AND version = ${version})
      WHERE id = ${documentId}`
  })

export const entity = (
  key: string,
  name: string,
  kind: ExtractedEntity["kind"],
  options: { readonly aliases?: ReadonlyArray<string>; readonly mentions?: number; readonly description?: string } =
    {}
): ExtractedEntity => ({
  key,
  name,
  kind,
  aliases: options.aliases ?? [],
  mentions: options.mentions ?? 1,
  description: options.description ?? null
})

/** A day-precision time starting at `day` (YYYY-MM-DD). */
export const onDay = (day: string): TimeValue => {
  const start = new Date(`${day}T00:00:00Z`)
  return {
    start: start.toISOString(),
    end: new Date(start.getTime() + 86_400_000).toISOString(),
    precision: "day",
    text: day,
    relative: false
  }
}

export const event = (
  statement: string,
  kind: string,
  participants: ReadonlyArray<readonly [string, ExtractedEvent["participants"][number]["role"]]>,
  options: {
    readonly chunks?: ReadonlyArray<number>
    readonly time?: TimeValue | null
    readonly place?: string | null
    readonly confidence?: number
  } = {}
): ExtractedEvent => ({
  statement,
  kind,
  chunkOrdinals: options.chunks ?? [0],
  participants: participants.map(([entity, role]) => ({ entity, role })),
  time: options.time ?? null,
  place: options.place ?? null,
  confidence: options.confidence ?? 0.8
})

/** Two documents of one source: Jane Smith and Acme in both, "Jordan" a person in one and a place in the other. */
export const chunksA = ["Jane Smith founded Acme Corp in Berlin.", "Smith met Jordan at the Acme office."]
export const extractionA: Extraction = {
  entities: [
    entity("jane", "Jane Smith", "person", { aliases: ["Smith"], mentions: 2, description: "Founder of Acme." }),
    entity("acme", "Acme Corp", "organization", { mentions: 2 }),
    entity("berlin", "Berlin", "place"),
    entity("jordan", "Jordan", "person")
  ],
  events: [
    event("Jane Smith founded Acme Corp", "found", [["jane", "actor"], ["acme", "object"]], {
      chunks: [0],
      time: onDay("2019-03-01"),
      place: "berlin"
    }),
    event("Smith met Jordan", "meet", [["jane", "actor"], ["jordan", "object"]], {
      chunks: [1],
      time: onDay("2020-05-10")
    })
  ]
}

export const chunksB = ["Dr. Jane Smith visited Jordan in 2021.", "Acme opened an office in Jordan."]
export const extractionB: Extraction = {
  entities: [
    entity("js", "Dr. Jane Smith", "person"),
    entity("jordan", "Jordan", "place", { mentions: 2 }),
    entity("acme", "Acme", "organization")
  ],
  events: [
    event("Jane Smith visited Jordan", "visit", [["js", "actor"]], {
      chunks: [0],
      time: onDay("2021-06-01"),
      place: "jordan"
    }),
    event("Acme opened an office in Jordan", "open", [["acme", "actor"]], { chunks: [1], place: "jordan" })
  ]
}
