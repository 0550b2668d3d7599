/**
 * compromise's view operations (match, not, split, if) as plain functions over one sentence's tagged terms: a view
 * is a list of spans of the sentence ("pieces"), and each operation maps pieces to pieces as compromise's pointer
 * arithmetic does (pointers/api/lib/split.js, match/api/split.js), without building a view, cloning the document or
 * parsing a pattern for every call. `subjects.ts` and `verbs.ts` read compromise's heuristics through them.
 */

/** A term as compromise holds it, after tagging and chunking. */
export interface TaggedTerm {
  readonly text: string
  readonly normal: string
  readonly pre: string
  readonly post: string
  readonly tags: ReadonlySet<string>
  readonly chunk?: string | null | undefined
  readonly machine?: string | null | undefined
  readonly implicit?: string | null | undefined
  readonly root?: string | null | undefined
  readonly alias?: ReadonlyArray<string> | undefined
}

/** Term indexes in the sentence, end exclusive. */
export type Span = readonly [number, number]

export type Terms = ReadonlyArray<TaggedTerm>

/** compromise's bare word match ("and while"): the machine form, an alias, the text or the normal form. */
export const isWord = (term: TaggedTerm | undefined, word: string) =>
  term !== undefined &&
  ((term.machine !== null && term.machine !== undefined && term.machine === word) ||
    (term.alias?.includes(word) ?? false) || term.text === word || term.normal === word)

/** compromise's "(one|two)" match: the root, implicit, machine or normal form, or the text. */
export const isOneOf = (term: TaggedTerm | undefined, words: ReadonlySet<string>) => {
  if (term === undefined) return false
  const form = term.root || term.implicit || term.machine || term.normal
  return words.has(form) || words.has(term.text)
}

export const has = (term: TaggedTerm | undefined, tag: string) => term !== undefined && term.tags.has(tag)

export const words = (...list: ReadonlyArray<string>) => new Set(list)

// --- compromise's pointer splits (pointers/api/lib/split.js and match/api/split.js), for one sentence ---

interface Pivot {
  passthrough?: Span
  before?: Span | undefined
  match?: Span
  after?: Span | undefined
}

const pivotBy = (full: Span, match: Span): Pivot => {
  const pivot: Pivot = { match }
  if (full[0] < match[0]) pivot.before = [full[0], match[0] < full[1] ? match[0] : full[1]]
  if (full[1] > match[1]) pivot.after = [match[1], full[1]]
  return pivot
}

export type Matcher = (terms: Terms, piece: Span) => ReadonlyArray<Span>

/** The pieces split at the matches; null where nothing matched (the pieces stay as they are). */
const splitAll = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): Array<Pivot> | null => {
  let all: Array<Pivot> | null = null
  pieces.forEach((piece, p) => {
    const matches = matcher(terms, piece)
    if (matches.length === 0) {
      all?.push({ passthrough: piece })
      return
    }
    all ??= pieces.slice(0, p).map((passthrough) => ({ passthrough }))
    let carry = piece
    matches.forEach((match, i) => {
      const found = pivotBy(carry, match)
      if (i === matches.length - 1) all!.push(found)
      else {
        all!.push({ before: found.before, match: found.match! })
        if (found.after !== undefined) carry = found.after
      }
    })
  })
  return all
}

const push = (out: Array<Span>, span: Span | undefined) => {
  if (span !== undefined) out.push(span)
}

/** [before], [match], [after]; without the matches, compromise's `not`. */
const around = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher, matches: boolean): ReadonlyArray<Span> => {
  const all = splitAll(terms, pieces, matcher)
  if (all === null) return pieces
  const out: Array<Span> = []
  for (const pivot of all) {
    push(out, pivot.passthrough)
    push(out, pivot.before)
    if (matches) push(out, pivot.match)
    push(out, pivot.after)
  }
  return out
}

/** [before], [match], [after] */
export const splitOn = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): ReadonlyArray<Span> =>
  around(terms, pieces, matcher, true)

/** [before], [after]: the pieces without the matches (compromise's `not`). */
export const without = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): ReadonlyArray<Span> =>
  around(terms, pieces, matcher, false)

/** [before match], [after] */
export const splitAfter = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): ReadonlyArray<Span> => {
  const all = splitAll(terms, pieces, matcher)
  if (all === null) return pieces
  const out: Array<Span> = []
  for (const pivot of all) {
    push(out, pivot.passthrough)
    if (pivot.before !== undefined && pivot.match !== undefined) out.push([pivot.before[0], pivot.match[1]])
    else {
      push(out, pivot.before)
      push(out, pivot.match)
    }
    push(out, pivot.after)
  }
  return out
}

/** [before], [match after]; a match that ends its piece takes the next piece's words before its first match. */
export const splitBefore = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): ReadonlyArray<Span> => {
  const all = splitAll(terms, pieces, matcher)
  if (all === null) return pieces
  for (let i = 0; i < all.length; i++) {
    const next = all[i + 1]
    if (all[i]!.after === undefined && next?.before !== undefined && all[i]!.match !== undefined) {
      all[i]!.after = next.before
      next.before = undefined
    }
  }
  const out: Array<Span> = []
  for (const pivot of all) {
    push(out, pivot.passthrough)
    push(out, pivot.before)
    if (pivot.match !== undefined && pivot.after !== undefined) out.push([pivot.match[0], pivot.after[1]])
    else push(out, pivot.match)
  }
  return out
}

/** Matches of one pattern tried at each word left to right, the next try after the end of a match. */
export const scan = (at: (terms: Terms, i: number, piece: Span) => Span | null, group?: (match: Span) => Span): Matcher =>
(terms, piece) => {
  const found: Array<Span> = []
  for (let i = piece[0]; i < piece[1]; i++) {
    const match = at(terms, i, piece)
    if (match === null) continue
    found.push(group === undefined ? match : group(match))
    if (match[1] - 1 > i) i = match[1] - 1
  }
  return found
}

/** A pattern of one word. */
export const single = (test: (term: TaggedTerm) => boolean): Matcher =>
  scan((terms, i) => (test(terms[i]!) ? [i, i + 1] : null))

/** A two-word pattern ("and while"). */
export const pair = (first: (term: TaggedTerm) => boolean, second: (term: TaggedTerm) => boolean): Matcher =>
  scan((terms, i, piece) => (i + 1 < piece[1] && first(terms[i]!) && second(terms[i + 1]!) ? [i, i + 2] : null))

export const wordCount = (terms: Terms, start: number, end: number) => {
  let count = 0
  for (let i = Math.max(0, start); i < Math.min(terms.length, end); i++) if (terms[i]!.text !== "") count++
  return count
}

/**
 * A span's character offsets as compromise's `json({ offset: true })` gives them: from its first word (after that
 * word's leading punctuation) for the length of its words with their punctuation and spaces, trimmed.
 */
export const spanOffsets = (
  terms: ReadonlyArray<TaggedTerm & { readonly offset: { readonly start: number } }>,
  span: Span
): { readonly start: number; readonly length: number } => {
  let text = ""
  // A contraction's implied word has no text: compromise writes its normal form.
  for (let k = span[0]; k < span[1]; k++) text += terms[k]!.pre + (terms[k]!.text || terms[k]!.normal) + terms[k]!.post
  return { start: terms[span[0]]!.offset.start, length: text.trim().length }
}

/** The pieces the matcher finds something in (compromise's `if`). */
export const having = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): Array<Span> =>
  pieces.filter((piece) => matcher(terms, piece).length > 0)

/** Whether the matcher finds something in any of the pieces (compromise's `has`). */
export const anyHas = (terms: Terms, pieces: ReadonlyArray<Span>, matcher: Matcher): boolean =>
  pieces.some((piece) => matcher(terms, piece).length > 0)
