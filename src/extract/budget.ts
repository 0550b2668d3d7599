/**
 * How much of a document extraction read. Extraction is the costliest stage (the rules take about 2 minutes per
 * MB of text), so it reads at most ENGRAM_EXTRACT_MAX_CHARS characters of a document's chunks, in order, and
 * stops at ENGRAM_EXTRACT_TIMEOUT_SECONDS; the document stays searchable in full, only its events and entities
 * come from the part read. Pure, no I/O.
 */
import { truncateCharacters } from "../domain/Text.ts"
import type { ExtractionChunk } from "./Extraction.ts"

export type StopReason = "char_limit" | "time_limit" | "failed"

/** What the job records under `extraction` in its result. */
export interface ExtractionCoverage {
  readonly complete: boolean
  readonly chars_read: number
  readonly chars_total: number
  readonly reason: StopReason | null
}

const lengthOf = (chunks: ReadonlyArray<ExtractionChunk>) => chunks.reduce((sum, chunk) => sum + chunk.text.length, 0)

/** The leading chunks whose text fits in `maxChars` (at least one, when the first alone is longer: cut). */
export const chunksWithin = <C extends ExtractionChunk>(
  chunks: ReadonlyArray<C>,
  maxChars: number
): ReadonlyArray<C> => {
  const kept: Array<C> = []
  let total = 0
  for (const chunk of chunks) {
    if (total + chunk.text.length > maxChars) {
      if (kept.length === 0) kept.push({ ...chunk, text: truncateCharacters(chunk.text, maxChars) })
      break
    }
    kept.push(chunk)
    total += chunk.text.length
  }
  return kept
}

/**
 * A chunk as extraction reads it: without the opening text it repeats from the previous chunk (the chunker's
 * overlap, `skip` characters), so every sentence is read once — its events and mentions belong to the chunk read
 * first, not to both — and with its messages' offsets moved to match (a message wholly repeated is left out).
 */
export const withoutRepeated = <C extends ExtractionChunk>(chunk: C, skip: number): C => {
  const cut = Math.min(Math.max(0, skip), chunk.text.length)
  if (cut === 0) return chunk
  return {
    ...chunk,
    text: chunk.text.slice(cut),
    messages: chunk.messages?.flatMap((message) =>
      message.end <= cut ? [] : [{ ...message, start: Math.max(0, message.start - cut), end: message.end - cut }]
    )
  }
}

/** Coverage of an extraction that read `read` of the document's `all` chunks, stopped (or not) for `stopped`. */
export const coverageOf = (
  all: ReadonlyArray<ExtractionChunk>,
  read: ReadonlyArray<ExtractionChunk>,
  stopped: StopReason | null
): ExtractionCoverage => {
  const charsTotal = lengthOf(all)
  const charsRead = lengthOf(read)
  const reason = stopped ?? (charsRead < charsTotal ? "char_limit" : null)
  return { complete: reason === null, chars_read: charsRead, chars_total: charsTotal, reason }
}
