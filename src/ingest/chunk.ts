import type { Block, Parsed } from "./Parsed.ts"

export interface ChunkOptions {
  /** Largest chunk, in approximate tokens (words and punctuation marks). */
  readonly targetTokens: number
  /** Tokens repeated from the end of one chunk at the start of the next within a section. */
  readonly overlapTokens: number
}

export interface ChunkDraft {
  readonly ordinal: number
  readonly text: string
  readonly token_count: number
  readonly section_path: ReadonlyArray<string>
  readonly char_start: number
  readonly char_end: number
  readonly speaker: string | null
  readonly spoken_at: string | null
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
 * blocks of the previous one that fit in the overlap. Each chunk's text is exactly
 * `parsed.text.slice(char_start, char_end)`.
 */
export const chunkParsed = (parsed: Parsed, options: ChunkOptions): Array<ChunkDraft> => {
  const limit = Math.max(1, options.targetTokens)
  const overlap = Math.min(options.overlapTokens, Math.floor(limit / 2))
  const chunks: Array<ChunkDraft> = []
  let current: Array<Span> = []

  const emit = (spans: ReadonlyArray<Span>) => {
    const first = spans[0]!
    const last = spans[spans.length - 1]!
    const speakers = new Set(spans.map((span) => span.block.speaker))
    const text = parsed.text.slice(first.start, last.end)
    chunks.push({
      ordinal: chunks.length,
      text,
      token_count: countTokens(text),
      section_path: first.block.section_path,
      char_start: first.start,
      char_end: last.end,
      speaker: speakers.size === 1 ? first.block.speaker ?? null : null,
      spoken_at: first.block.timestamp ?? null
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
