import { nearDuplicateKey } from "../retrieval/fusion.ts"
import type { Block, Parsed } from "./Parsed.ts"

export interface ChunkOptions {
  /** Largest chunk, in approximate tokens (words and punctuation marks). */
  readonly targetTokens: number
  /** Tokens repeated from the end of one chunk at the start of the next within a section. */
  readonly overlapTokens: number
  /** The document's own date (ISO): the time of messages before the first one that has a timestamp. */
  readonly documentDate?: string | null | undefined
}

/** One chat message (or the part of a long one) in a chunk; offsets in the document's text, like the chunk's. */
export interface ChunkMessage {
  readonly speaker: string
  readonly spoken_at: string | null
  readonly char_start: number
  readonly char_end: number
}

export interface ChunkDraft {
  readonly ordinal: number
  readonly text: string
  /** What search's near-duplicate collapse compares (`nearDuplicateKey`), made here, off the service's thread. */
  readonly near_key: Uint8Array
  readonly token_count: number
  readonly section_path: ReadonlyArray<string>
  readonly char_start: number
  readonly char_end: number
  /** The speaker of every message in the chunk when there is one; null for several or none. */
  readonly speaker: string | null
  /** The earliest and latest time of the chunk's messages. */
  readonly spoken_at: string | null
  readonly spoken_until: string | null
  /** The chat messages the chunk holds, in order; empty for other text. */
  readonly messages: ReadonlyArray<ChunkMessage>
}

const tokenPattern = /[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu

/** Approximate token count: words and punctuation marks (close to a WordPiece count for English prose). */
export const countTokens = (text: string) => text.match(tokenPattern)?.length ?? 0

interface Span {
  readonly start: number
  readonly end: number
  readonly tokens: number
  readonly block: Block
}

const sentences = new Intl.Segmenter("en", { granularity: "sentence" })

/** Splits one oversized block into spans of at most `limit` tokens: at sentence ends, else between words. */
const splitBlock = (block: Block, limit: number, overlap: number): Array<Span> => {
  const units: Array<{ start: number; end: number; tokens: number }> = []
  for (const { segment, index } of sentences.segment(block.text)) {
    const tokens = countTokens(segment)
    if (tokens <= limit) {
      units.push({ start: index, end: index + segment.trimEnd().length, tokens })
      continue
    }
    for (const word of segment.matchAll(/\S+/g)) {
      units.push({ start: index + word.index, end: index + word.index + word[0].length, tokens: countTokens(word[0]) })
    }
  }
  const spans: Array<Span> = []
  let first = 0
  while (first < units.length) {
    let last = first
    let tokens = units[first]!.tokens
    while (last + 1 < units.length && tokens + units[last + 1]!.tokens <= limit) tokens += units[++last]!.tokens
    spans.push({ start: block.start + units[first]!.start, end: block.start + units[last]!.end, tokens, block })
    if (last + 1 >= units.length) break
    let next = last + 1
    let repeated = 0
    while (next - 1 > first && repeated + units[next - 1]!.tokens <= overlap) repeated += units[--next]!.tokens
    first = next
  }
  return spans
}

const sameSection = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((part, i) => part === b[i])

/**
 * Structure-aware chunking. Chunks never cross a section (heading, page, sheet) boundary; whole blocks
 * (paragraphs, list items, table rows, chat turns) are kept together up to the target size; a block larger
 * than the target is split at sentence ends. Within a section, the next chunk starts with the trailing
 * blocks of the previous one that fit in the overlap. Chat messages keep their speaker and time (`messages`); a
 * message larger than the target is split inside itself into chunks of its own. Each chunk's text is exactly
 * `parsed.text.slice(char_start, char_end)`.
 */
export const chunkParsed = (parsed: Parsed, options: ChunkOptions): Array<ChunkDraft> => {
  const limit = Math.max(1, options.targetTokens)
  const overlap = Math.min(options.overlapTokens, Math.floor(limit / 2))
  const chunks: Array<ChunkDraft> = []
  let current: Array<Span> = []

  // A message without a timestamp takes the previous message's, and before the first dated one the document's date.
  const spokenAt = new Map<Block, string | null>()
  let lastTime = options.documentDate ?? null
  for (const block of parsed.blocks) {
    if (block.kind !== "message") continue
    if (block.timestamp !== undefined) lastTime = block.timestamp
    spokenAt.set(block, lastTime)
  }

  const emit = (spans: ReadonlyArray<Span>) => {
    const first = spans[0]!
    const last = spans[spans.length - 1]!
    const messages: Array<ChunkMessage> = spans.flatMap((span) =>
      span.block.kind === "message" && span.block.speaker !== undefined
        ? [{ speaker: span.block.speaker, spoken_at: spokenAt.get(span.block) ?? null, char_start: span.start, char_end: span.end }]
        : []
    )
    const speakers = new Set(messages.map((message) => message.speaker))
    const times = messages.flatMap((message) => message.spoken_at === null ? [] : [message.spoken_at]).sort()
    const text = parsed.text.slice(first.start, last.end)
    chunks.push({
      ordinal: chunks.length,
      text,
      near_key: nearDuplicateKey(text),
      token_count: countTokens(text),
      section_path: first.block.section_path,
      char_start: first.start,
      char_end: last.end,
      speaker: speakers.size === 1 ? messages[0]!.speaker : null,
      spoken_at: times[0] ?? null,
      spoken_until: times[times.length - 1] ?? null,
      messages
    })
  }

  const flush = (keepOverlap: boolean) => {
    if (current.length === 0) return
    emit(current)
    if (!keepOverlap) {
      current = []
      return
    }
    const kept: Array<Span> = []
    let tokens = 0
    for (let i = current.length - 1; i > 0 && tokens + current[i]!.tokens <= overlap; i--) {
      tokens += current[i]!.tokens
      kept.unshift(current[i]!)
    }
    current = kept
  }

  const tokensOf = (spans: ReadonlyArray<Span>) => spans.reduce((sum, span) => sum + span.tokens, 0)

  for (const block of parsed.blocks) {
    if (current.length > 0 && !sameSection(current[0]!.block.section_path, block.section_path)) flush(false)
    const tokens = countTokens(block.text)
    const spans = tokens <= limit ? [{ start: block.start, end: block.end, tokens, block }] : splitBlock(block, limit, overlap)
    // A chat message too long for one chunk is split inside itself, and its pieces share a chunk with no other message.
    if (block.kind === "message" && spans.length > 1) {
      flush(false)
      for (const span of spans) {
        current = [span]
        flush(false)
      }
      continue
    }
    for (const span of spans) {
      if (current.length > 0 && tokensOf(current) + span.tokens > limit) {
        flush(span.block !== current[current.length - 1]!.block)
        if (tokensOf(current) + span.tokens > limit) current = []
      }
      current.push(span)
    }
  }
  flush(false)
  return chunks
}
