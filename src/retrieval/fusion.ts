/** One retriever's ranking: best first. New lists (graph, …) plug in by name. */
export interface RankedList {
  readonly name: string
  readonly weight: number
  readonly hits: ReadonlyArray<{ readonly id: string; readonly score: number }>
}

export interface Contribution {
  readonly list: string
  readonly rank: number
  readonly score: number
}

export interface Fused {
  readonly id: string
  readonly score: number
  readonly contributions: ReadonlyArray<Contribution>
}

/**
 * Weighted reciprocal rank fusion: each list adds weight / (k + rank) for every item it ranks (rank from 1; items
 * a list scores equally share the rank of the first of them). Scores of different lists are never compared, only
 * ranks, so lists with unrelated score scales fuse well.
 * Ties keep the order of first appearance across the lists (in list order), which makes the result stable.
 */
export const fuseRankings = (lists: ReadonlyArray<RankedList>, k = 60): Array<Fused> => {
  const fused = new Map<string, { score: number; contributions: Array<Contribution>; order: number }>()
  let order = 0
  for (const list of lists) {
    let rank = 0
    list.hits.forEach((hit, index) => {
      // Equal scores share the better rank ("1, 2, 2, 4"): a list that cannot tell items apart boosts them alike.
      if (index === 0 || hit.score !== list.hits[index - 1]!.score) rank = index + 1
      const entry = fused.get(hit.id) ?? { score: 0, contributions: [], order: order++ }
      if (entry.contributions.some((c) => c.list === list.name)) return
      entry.score += list.weight / (k + rank)
      entry.contributions.push({ list: list.name, rank, score: hit.score })
      fused.set(hit.id, entry)
    })
  }
  return [...fused.entries()]
    .sort(([, a], [, b]) => b.score - a.score || a.order - b.order)
    .map(([id, entry]) => ({ id, score: entry.score, contributions: entry.contributions }))
}

/** Word ids fit in 17 bits, so a trigram's three ids make one exact number below 2^51. */
const idBits = 2 ** 17
/** Texts under three words are one shingle, the words' text as a whole, numbered above every trigram. */
const shortBase = 2 ** 51

/** A text's shingles, sorted and distinct: numbers, or the trigrams' text where words outnumber the ids. */
type Shingles = Float64Array | ReadonlyArray<string>

const ascii = /^[\x00-\x7f]*$/
/** An ASCII text's words are its runs of ASCII letters and digits (NFKC leaves ASCII as it is). */
const wordsOf = (text: string) =>
  (ascii.test(text)
    ? text.toLowerCase().match(/[a-z0-9]+/g)
    : text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu)) ?? []

/**
 * A text's word trigrams (of `words`, lower case, NFKC), each as one number from the ids `ids` gives its words (one
 * map for all the texts compared, so equal trigrams are equal numbers); undefined once the ids run out of 17 bits.
 */
const shingleNumbers = (words: ReadonlyArray<string>, ids: Map<string, number>): Float64Array | undefined => {
  if (words.length === 0) return new Float64Array(0)
  const idOf = (word: string) => {
    let id = ids.get(word)
    if (id === undefined) ids.set(word, id = ids.size)
    return id
  }
  if (words.length < 3) {
    const id = idOf(words.join(" "))
    return id >= idBits ? undefined : Float64Array.of(shortBase + id)
  }
  const numbers = new Float64Array(words.length - 2)
  let a = idOf(words[0]!)
  let b = idOf(words[1]!)
  for (let i = 2; i < words.length; i++) {
    const c = idOf(words[i]!)
    numbers[i - 2] = (a * idBits + b) * idBits + c
    a = b
    b = c
  }
  if (ids.size > idBits) return undefined
  numbers.sort()
  let distinct = 0
  for (let i = 0; i < numbers.length; i++) if (i === 0 || numbers[i] !== numbers[distinct - 1]) numbers[distinct++] = numbers[i]!
  return numbers.subarray(0, distinct)
}

/** The same shingles as text (the trigram's words, or the words of a shorter text, joined by spaces). */
const shingleTexts = (words: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (words.length < 3) return words.length === 0 ? [] : [words.join(" ")]
  const set = new Set<string>()
  for (let i = 0; i + 3 <= words.length; i++) set.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`)
  return [...set].sort()
}

/** Whether sets of `a` and `b` items can reach a Jaccard similarity of `threshold` at all (by their sizes alone). */
const sizesAllow = (a: number, b: number, threshold: number) =>
  (a === 0 && b === 0) || Math.min(a, b) >= threshold * Math.max(a, b)
/** Whether sets of `a` and `b` items sharing `shared` have a Jaccard similarity of at least `threshold`. */
const jaccard = (a: number, b: number, shared: number, threshold: number) =>
  (a === 0 && b === 0) || shared / (a + b - shared) >= threshold

/** Items shared by two sorted, distinct arrays of the same kind. */
const sharedSorted = (a: Shingles, b: Shingles) => {
  let shared = 0
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) {
      shared++
      i++
      j++
    } else if (a[i]! < b[j]!) i++
    else j++
  }
  return shared
}

/**
 * Keeps the best-ranked of each group of near-duplicate texts (word-trigram Jaccard ≥ threshold), so the
 * same passage stored twice (two uploads, overlapping chunks) does not fill the results. Returns the kept
 * items in order, each with the ids it absorbed: an item joins the first kept item it is a near duplicate of.
 * Stops once `limit` items are kept: the items after the last kept one are not read.
 * Only kept items that share a trigram with an item's first few are compared with it (prefix filtering: two
 * sets with Jaccard ≥ t share one of the first |S| − ⌈t·|S|⌉ + 1 items of each, in any one order of all trigrams;
 * |S| − ⌊t·|S|⌋ + 2 are taken, which also covers rounding). Trigrams are numbered from per-call word ids; with more
 * distinct words than the ids can hold, the collapse starts again over the trigrams' text.
 */
export const collapseNearDuplicates = <T extends { readonly id: string; readonly text: string }>(
  items: ReadonlyArray<T>,
  threshold = 0.9,
  limit = Infinity
): Array<T & { readonly duplicates: ReadonlyArray<string> }> => {
  const ids = new Map<string, number>()
  return collapseWith(items, threshold, limit, (text) => shingleNumbers(wordsOf(text), ids)) ??
    collapseWith(items, threshold, limit, (text) => shingleTexts(wordsOf(text)))!
}

/** The collapse with each text's shingles from `shinglesOf`; undefined when it gives up on a text. */
const collapseWith = <T extends { readonly id: string; readonly text: string }>(
  items: ReadonlyArray<T>,
  threshold: number,
  limit: number,
  shinglesOf: (text: string) => Shingles | undefined
): Array<T & { readonly duplicates: ReadonlyArray<string> }> | undefined => {
  const kept: Array<{ item: T; shingles: Shingles; duplicates: Array<string> }> = []
  // Kept items by the shingles of their prefixes; the first kept item without shingles.
  const byPrefix = new Map<number | string, Array<number>>()
  let keptEmpty = -1
  const prefixOf = (shingles: Shingles) =>
    shingles.slice(0, Math.min(shingles.length, shingles.length - Math.floor(threshold * shingles.length) + 2))
  for (const item of items) {
    if (kept.length >= limit) break
    const own = shinglesOf(item.text)
    if (own === undefined) return undefined
    let twin = own.length === 0 ? keptEmpty : -1
    if (own.length > 0) {
      const candidates = new Set<number>()
      for (const shingle of prefixOf(own)) for (const at of byPrefix.get(shingle) ?? []) candidates.add(at)
      for (const at of [...candidates].sort((a, b) => a - b)) {
        const other = kept[at]!.shingles
        if (
          sizesAllow(other.length, own.length, threshold) &&
          jaccard(other.length, own.length, sharedSorted(other, own), threshold)
        ) {
          twin = at
          break
        }
      }
    }
    if (twin !== -1) {
      kept[twin]!.duplicates.push(item.id)
      continue
    }
    if (own.length === 0) keptEmpty = kept.length
    for (const shingle of prefixOf(own)) {
      const list = byPrefix.get(shingle)
      if (list === undefined) byPrefix.set(shingle, [kept.length])
      else list.push(kept.length)
    }
    kept.push({ item, shingles: own, duplicates: [] })
  }
  return kept.map(({ item, duplicates }) => ({ ...item, duplicates }))
}
