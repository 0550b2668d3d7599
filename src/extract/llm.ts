import { Effect, Schema } from "effect"
import type { LanguageModel } from "effect/ai"
import {
  entityKinds,
  type EntityKind,
  type ExtractedEntity,
  type ExtractedEvent,
  type Extraction,
  type ExtractionChunk,
  type ExtractionInput
} from "./Extraction.ts"
import { normalizeName } from "./resolve.ts"
import { truncateCharacters } from "../domain/Text.ts"

/** What the model is asked to return, validated before anything is stored. */
const LlmExtraction = Schema.Struct({
  entities: Schema.Array(Schema.Struct({
    name: Schema.String,
    kind: Schema.String,
    aliases: Schema.optional(Schema.Array(Schema.String)),
    description: Schema.optional(Schema.NullOr(Schema.String))
  })),
  events: Schema.Array(Schema.Struct({
    statement: Schema.String,
    kind: Schema.String,
    chunk: Schema.Number,
    participants: Schema.Array(Schema.Struct({ name: Schema.String, role: Schema.String })),
    time: Schema.optional(Schema.NullOr(Schema.Struct({
      start: Schema.String,
      end: Schema.String,
      precision: Schema.String,
      text: Schema.optional(Schema.String)
    }))),
    place: Schema.optional(Schema.NullOr(Schema.String)),
    confidence: Schema.optional(Schema.Number)
  }))
})
type LlmExtraction = typeof LlmExtraction.Type

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(LlmExtraction))

const instructions = `Extract the entities and events of the numbered text chunks below. Answer with one JSON object and
nothing else: {"entities": [{"name", "kind", "aliases", "description"}], "events": [{"statement", "kind", "chunk",
"participants": [{"name", "role"}], "time": {"start", "end", "precision", "text"} or null, "place", "confidence"}]}.
kind of an entity: one of ${entityKinds.join(", ")}. name: the fullest name, without titles (Mr., Dr.).
An event is something that happened or will happen: statement is one short sentence, kind the main verb's lemma,
chunk the number of the chunk it comes from, role one of actor, object, place, participant, and participant names
must be entities you listed. time: ISO 8601 start (inclusive) and end (exclusive) with precision minute, hour, day,
week, month, quarter, year or decade; resolve relative dates ("last Tuesday") against the time of the message that
says them (given in brackets before a chat message), else the chunk's date when one is given, otherwise use null.
In a chat message, "I" is its speaker. confidence: 0 to 1.`

/** A chat chunk's messages each open with the time they were sent, which anchors their relative dates. */
const datedText = (chunk: ExtractionChunk) =>
  [...(chunk.messages ?? [])].sort((a, b) => b.start - a.start).reduce(
    (text, message) =>
      message.spokenAt === null || message.start < 0 || message.start >= text.length
        ? text
        : `${text.slice(0, message.start)}[${message.spokenAt}] ${text.slice(message.start)}`,
    chunk.text
  )

const chunkBlock = (chunk: ExtractionChunk) =>
  `[${chunk.ordinal}]${chunk.speaker === null ? "" : ` ${chunk.speaker}`}${
    chunk.spokenAt === null ? "" : ` (${chunk.spokenAt})`
  }\n${datedText(chunk)}`

/** The JSON object in a model's answer (models like to wrap it in prose or code fences). */
const jsonIn = (text: string) => {
  const start = text.indexOf("{")
  const end = text.lastIndexOf("}")
  return start === -1 || end <= start ? text : text.slice(start, end + 1)
}

const precisions = new Set(["minute", "hour", "day", "week", "month", "quarter", "year", "decade"])
const roles = new Set(["actor", "object", "place", "participant"])

const isoOrNull = (value: string) => Number.isNaN(Date.parse(value)) ? null : new Date(value).toISOString()

/** Counts how often a name or its aliases appear in the text (at least once: the model saw it). */
const mentionsIn = (text: string, names: ReadonlyArray<string>) => {
  const lower = text.toLowerCase()
  let count = 0
  for (const name of names) {
    const needle = name.toLowerCase()
    if (needle.length < 2) continue
    for (let at = lower.indexOf(needle); at !== -1; at = lower.indexOf(needle, at + needle.length)) count++
  }
  return Math.max(1, count)
}

/** The model's answer as an Extraction: unknown kinds become "other", events must cite listed entities. */
const toExtraction = (answer: LlmExtraction, batch: ReadonlyArray<ExtractionChunk>): Extraction => {
  const text = batch.map((chunk) => chunk.text).join("\n")
  const ordinals = new Set(batch.map((chunk) => chunk.ordinal))
  const entities = new Map<string, ExtractedEntity>()
  const keyOf = new Map<string, string>()
  for (const raw of answer.entities) {
    const key = normalizeName(raw.name)
    if (key === "") continue
    const kind = (entityKinds as ReadonlyArray<string>).includes(raw.kind) ? raw.kind as EntityKind : "other"
    const aliases = (raw.aliases ?? []).filter((alias) => normalizeName(alias) !== "" && alias !== raw.name)
    entities.set(key, {
      key,
      name: raw.name.trim(),
      kind,
      aliases,
      mentions: mentionsIn(text, [raw.name, ...aliases]),
      description: raw.description === undefined || raw.description === null ? null : truncateCharacters(raw.description, 300)
    })
    for (const name of [raw.name, ...aliases]) keyOf.set(normalizeName(name), key)
  }
  const events: Array<ExtractedEvent> = []
  for (const raw of answer.events) {
    const participants = raw.participants.flatMap((p) => {
      const entity = keyOf.get(normalizeName(p.name))
      return entity === undefined ? [] : [{ entity, role: roles.has(p.role) ? p.role as "actor" : "participant" as const }]
    })
    if (participants.length === 0 || raw.statement.trim() === "") continue
    const start = raw.time ? isoOrNull(raw.time.start) : null
    const end = raw.time ? isoOrNull(raw.time.end) : null
    const time = raw.time && start !== null && end !== null && start < end && precisions.has(raw.time.precision)
      ? {
        start,
        end,
        precision: raw.time.precision as "day",
        text: raw.time.text ?? "",
        relative: false
      }
      : null
    const place = raw.place === undefined || raw.place === null ? null : keyOf.get(normalizeName(raw.place)) ?? null
    events.push({
      statement: truncateCharacters(raw.statement.trim(), 300),
      kind: raw.kind.trim().toLowerCase() || "event",
      chunkOrdinals: ordinals.has(raw.chunk) ? [raw.chunk] : [batch[0]!.ordinal],
      participants,
      time,
      place,
      confidence: Math.min(1, Math.max(0, raw.confidence ?? 0.7))
    })
  }
  return { entities: [...entities.values()], events }
}

/** Merges per-batch extractions: one entity per key, mentions added, aliases united. */
export const mergeExtractions = (parts: ReadonlyArray<Extraction>): Extraction => {
  const entities = new Map<string, ExtractedEntity>()
  for (const part of parts) {
    for (const entity of part.entities) {
      const seen = entities.get(entity.key)
      entities.set(
        entity.key,
        seen === undefined ? entity : {
          ...seen,
          aliases: [...new Set([...seen.aliases, ...entity.aliases])],
          mentions: seen.mentions + entity.mentions,
          description: seen.description ?? entity.description
        }
      )
    }
  }
  return { entities: [...entities.values()], events: parts.flatMap((part) => part.events) }
}

/** Chunks per model call stay under this many characters; a longer chunk is sent alone, cut at the limit. */
export const llmBatchChars = 6000

/** Consecutive chunks grouped so each call stays within `llmBatchChars`. */
export const batches = (chunks: ReadonlyArray<ExtractionChunk>) => {
  const groups: Array<Array<ExtractionChunk>> = []
  let size = 0
  for (const chunk of chunks) {
    const cut = chunk.text.length > llmBatchChars ? { ...chunk, text: truncateCharacters(chunk.text, llmBatchChars) } : chunk
    if (groups.length === 0 || size + cut.text.length > llmBatchChars) {
      groups.push([])
      size = 0
    }
    groups[groups.length - 1]!.push(cut)
    size += cut.text.length
  }
  return groups
}

/**
 * Extraction by a language model: one call per batch of chunks, the answer parsed and validated against the
 * schema above. Fails (for the caller to fall back to the rules) when the model fails or answers badly.
 */
export const extractWithModel = (model: LanguageModel.LanguageModel, input: ExtractionInput, maxCalls: number) =>
  Effect.gen(function*() {
    const groups = batches(input.chunks)
    if (groups.length > maxCalls) return yield* Effect.fail(`the document needs ${groups.length} model calls (limit ${maxCalls})`)
    const parts: Array<Extraction> = []
    for (const group of groups) {
      const response = yield* model.generateText({
        prompt: [
          { role: "system", content: instructions },
          {
            role: "user",
            content: `Title: ${input.title}\nDocument date: ${input.documentDate ?? "unknown"}\n\n` +
              group.map(chunkBlock).join("\n\n")
          }
        ]
      }).pipe(Effect.mapError((error) => `the model failed: ${error.message}`))
      const answer = yield* decode(jsonIn(response.text)).pipe(
        Effect.mapError(() => "the model's answer is not the JSON asked for")
      )
      parts.push(toExtraction(answer, group))
    }
    return mergeExtractions(parts)
  })
