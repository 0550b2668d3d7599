/**
 * The CPU-heavy background work that runs on worker threads (adapters/IngestThreads.ts), never on the thread that
 * serves requests: parsing, chunking, rule extraction, and the universe map of a source. Each task is plain data
 * in and out.
 */
import { chunkParsed, type ChunkDraft, type ChunkOptions } from "./chunk.ts"
import type { Parsed } from "./Parsed.ts"
import { type Format, parseDocument, Unparseable } from "./parse/index.ts"
import type { Extraction, ExtractionInput } from "../extract/Extraction.ts"
import { extractRulesUntil } from "../extract/rules.ts"
import { computeMap, type MapInput, type MapOutput } from "../background/universeMap.ts"

export type IngestTask =
  | { readonly kind: "parse"; readonly format: Format; readonly bytes: Uint8Array; readonly maxChars: number }
  /** `blocksJson`: the parse's blocks as stored (JSON text), decoded here rather than on the request thread. */
  | { readonly kind: "chunk"; readonly text: string; readonly blocksJson: string; readonly options: ChunkOptions }
  /** `milliseconds`: no chunk is parsed once they have passed (the thread's own clock). */
  | { readonly kind: "extract"; readonly input: ExtractionInput; readonly milliseconds: number }
  | { readonly kind: "map"; readonly input: MapInput }

export interface ParseResult {
  readonly text: string
  /** The blocks as JSON text, encoded here rather than on the request thread. */
  readonly blocksJson: string
  readonly blockCount: number
  /** The parsed text's length before it was cut to `maxChars`. */
  readonly charsTotal: number
}

export interface ExtractResult {
  readonly extraction: Extraction
  readonly chunksRead: number
}

export type IngestTaskResult<T extends IngestTask> = T["kind"] extends "parse" ? ParseResult
  : T["kind"] extends "chunk" ? ReadonlyArray<ChunkDraft>
  : T["kind"] extends "map" ? MapOutput
  : ExtractResult

/** A task's failure as it crosses the thread boundary: Unparseable content is permanent. */
export interface TaskFailure {
  readonly code: string
  readonly message: string
  readonly permanent: boolean
}

/** The first `maxChars` characters of a parsed document, its blocks cut to match. */
export const cutParsed = (parsed: Parsed, maxChars: number): Parsed => {
  if (parsed.text.length <= maxChars) return parsed
  const blocks = parsed.blocks.flatMap((block) =>
    block.start >= maxChars
      ? []
      : block.end <= maxChars
      ? [block]
      : [{ ...block, end: maxChars, text: block.text.slice(0, maxChars - block.start) }]
  )
  return { text: parsed.text.slice(0, maxChars), blocks }
}

export const runTask = async (
  task: IngestTask
): Promise<ParseResult | ReadonlyArray<ChunkDraft> | ExtractResult | MapOutput> => {
  switch (task.kind) {
    case "parse": {
      const whole = await parseDocument(task.format, task.bytes)
      const parsed = cutParsed(whole, task.maxChars)
      return {
        text: parsed.text,
        blocksJson: JSON.stringify(parsed.blocks),
        blockCount: parsed.blocks.length,
        charsTotal: whole.text.length
      }
    }
    case "chunk":
      return chunkParsed({ text: task.text, blocks: JSON.parse(task.blocksJson) as Parsed["blocks"] }, task.options)
    case "extract":
      return extractRulesUntil(task.input, performance.now() + task.milliseconds)
    case "map":
      return computeMap(task.input)
  }
}

export const failureOf = (error: unknown): TaskFailure =>
  error instanceof Unparseable
    ? { code: error.code, message: error.message, permanent: true }
    : { code: "task_failed", message: error instanceof Error ? error.message : String(error), permanent: false }
