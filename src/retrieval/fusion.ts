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

const ascii = /^[\x00-\x7f]*$/

/**
 * A word as two 32-bit FNV-1a hashes of its UTF-16 code units (different offset bases), so a trigram of three words
 * can be numbered with 53 bits (below).
 */
const fnvPrime = 16777619
const basisA = 2166136261
const basisB = 3735928559

/** Mixes three 32-bit word hashes, in order, into one 32-bit hash (the multiplications and shifts of murmur3's). */
const mix3 = (a: number, b: number, c: number) => {
  let k = Math.imul(a, 0x9e3779b1) ^ b
  k = Math.imul(k ^ (k >>> 15), 0x85ebca77) ^ c
  k = Math.imul(k ^ (k >>> 13), 0xc2b2ae3d)
  return (k ^ (k >>> 16)) >>> 0
}

/** Whether a code point above ASCII is a letter or a number (the texts' words are runs of those). */
const letterOrNumber = /^[\p{L}\p{N}]$/u

/** The words' hash pairs of the text last read by `wordHashes` (reused: read at once by `shinglesOf`). */
let hashesA = new Uint32Array(1024)
let hashesB = new Uint32Array(1024)

/**
 * Reads the text's words into `hashesA`/`hashesB`, in order, and answers how many there are: the runs of letters
 * and digits of its lower case NFKC form (ASCII text is read as it is, with upper case folded: NFKC leaves ASCII
 * alone), read code unit by code unit.
 */
const wordHashes = (text: string): number => {
  // Upper case is folded here in ASCII text only: what NFKC makes of a lower case letter stays as it is made.
  const folds = ascii.test(text)
  const source = folds ? text : text.toLowerCase().normalize("NFKC")
  if (hashesA.length < (source.length >> 1) + 1) {
    hashesA = new Uint32Array((source.length >> 1) + 1)
    hashesB = new Uint32Array(hashesA.length)
  }
  let count = 0
  let ha = basisA
  let hb = basisB
  let inWord = false
  for (let i = 0; i < source.length; i++) {
    let c = source.charCodeAt(i)
    if (c < 128) {
      if (folds && c >= 65 && c <= 90) c += 32
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        ha = Math.imul(ha ^ c, fnvPrime)
        hb = Math.imul(hb ^ c, fnvPrime)
        inWord = true
        continue
      }
    } else {
      const point = source.codePointAt(i)!
      if (letterOrNumber.test(String.fromCodePoint(point))) {
        ha = Math.imul(ha ^ c, fnvPrime)
        hb = Math.imul(hb ^ c, fnvPrime)
        if (point > 0xffff) {
          i++
          ha = Math.imul(ha ^ source.charCodeAt(i), fnvPrime)
          hb = Math.imul(hb ^ source.charCodeAt(i), fnvPrime)
        }
        inWord = true
        continue
      }
      if (point > 0xffff) i++
    }
    if (inWord) {
      hashesA[count] = ha
      hashesB[count++] = hb
      ha = basisA
      hb = basisB
      inWord = false
    }
  }
  if (inWord) {
    hashesA[count] = ha
    hashesB[count++] = hb
  }
  return count
}

/**
 * A text's shingles: its word trigrams, each one number of 53 bits (two independent 32-bit mixes of the three
 * words' hashes, 32 and 21 bits of them), or for a text under three words one number for all of it. Two different
 * shingles share a number with odds of about 2^-53; a search compares a few thousand. `values` are the distinct
 * ones in no order, `table` holds them for lookups (open addressing by their low bits, NaN where empty).
 */
interface Shingles {
  readonly values: Float64Array
  readonly table: Float64Array
}

const shinglesOf = (text: string): Shingles => {
  const count = wordHashes(text)
  const a = hashesA
  const b = hashesB
  const numbers = new Float64Array(count === 0 ? 0 : Math.max(1, count - 2))
  if (count > 0 && count < 3) {
    const [x, y] = count === 1 ? [a[0]!, b[0]!] : [mix3(a[0]!, a[1]!, 1), mix3(b[0]!, b[1]!, 1)]
    numbers[0] = mix3(x, 2, 2) * 2 ** 21 + (mix3(y, 2, 2) >>> 11)
  }
  for (let i = 2; i < count; i++) {
    numbers[i - 2] = mix3(a[i - 2]!, a[i - 1]!, a[i]!) * 2 ** 21 + (mix3(b[i - 2]!, b[i - 1]!, b[i]!) >>> 11)
  }
  const table = new Float64Array(2 ** Math.ceil(Math.log2(2 * numbers.length + 2))).fill(NaN)
  let distinct = 0
  for (let i = 0; i < numbers.length; i++) {
    const value = numbers[i]!
    const at = slotOf(table, value)
    if (Number.isNaN(table[at]!)) {
      table[at] = value
      numbers[distinct++] = value
    }
  }
  return { values: numbers.subarray(0, distinct), table }
}

/** Where `value` is in a shingle table, or the empty slot where it would go (linear probing from its low bits). */
const slotOf = (table: Float64Array, value: number) => {
  const mask = table.length - 1
  let at = (value >>> 0) & mask
  while (!Number.isNaN(table[at]!) && table[at] !== value) at = (at + 1) & mask
  return at
}

/** Whether `value` is one of the shingles. */
const holds = ({ table }: Shingles, value: number) => table[slotOf(table, value)] === value

/**
 * The high 32 bits of the `count` smallest values, ascending (the prefix of prefix filtering, in the order of the
 * numbers): an insertion into a sorted buffer, as `count` is a tenth of the values or so.
 */
const smallestHigh = (values: Float64Array, count: number): Uint32Array => {
  const kept = new Float64Array(count).fill(Infinity)
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!
    if (value >= kept[count - 1]!) continue
    let at = count - 1
    while (at > 0 && kept[at - 1]! > value) {
      kept[at] = kept[at - 1]!
      at--
    }
    kept[at] = value
  }
  return Uint32Array.from(kept, (value) => Math.floor(value / 2 ** 21))
}

/** Whether sets of `a` and `b` items can reach a Jaccard similarity of `threshold` at all (by their sizes alone). */
const sizesAllow = (a: number, b: number, threshold: number) =>
  (a === 0 && b === 0) || Math.min(a, b) >= threshold * Math.max(a, b)
/** Whether sets of `a` and `b` items sharing `shared` have a Jaccard similarity of at least `threshold`. */
const jaccard = (a: number, b: number, shared: number, threshold: number) =>
  (a === 0 && b === 0) || shared / (a + b - shared) >= threshold

/** Shingles the two texts share. */
const shared = (a: Shingles, b: Shingles) => {
  let count = 0
  for (let i = 0; i < a.values.length; i++) if (holds(b, a.values[i]!)) count++
  return count
}

/** The Jaccard similarity at which search collapses near-duplicates; stored near-duplicate keys are made for it. */
export const nearDuplicateThreshold = 0.9

/**
 * How many of a set's smallest items prefix filtering takes: two sets with Jaccard ≥ t share one of the first
 * |S| − ⌈t·|S|⌉ + 1 items of each, in any one order of all items (here the shingles' numbers); |S| − ⌊t·|S|⌋ + 2
 * are taken, which also covers rounding.
 */
const prefixLength = (size: number, threshold: number) => Math.min(size, size - Math.floor(threshold * size) + 2)

/**
 * What the collapse compares before it reads a text: the number of its distinct shingles and its prefix, the high
 * 32 bits of its smallest shingles, ascending. Texts whose prefixes share no number cannot be near duplicates; the
 * cut to 32 bits only adds pairs to count exactly, it never drops one.
 */
interface Key {
  readonly size: number
  readonly prefix: Uint32Array
}

const keyOf = ({ values }: Shingles, threshold: number): Key =>
  ({ size: values.length, prefix: smallestHigh(values, prefixLength(values.length, threshold)) })

/**
 * A text's near-duplicate key at `nearDuplicateThreshold`, as stored with each chunk (little-endian 32-bit words:
 * the size, then the prefix), so that search collapses its results without reading their texts. Stored keys hold
 * what `shinglesOf` makes: a change to how it reads words or numbers trigrams needs the stored keys left unread.
 */
export const nearDuplicateKey = (text: string): Uint8Array => {
  const { prefix, size } = keyOf(shinglesOf(text), nearDuplicateThreshold)
  const bytes = new Uint8Array(4 * (prefix.length + 1))
  const view = new DataView(bytes.buffer)
  view.setUint32(0, size, true)
  prefix.forEach((value, i) => view.setUint32(4 * (i + 1), value, true))
  return bytes
}

/** A stored key read back; undefined where it is not one (a key is at least its size and holds no more than it). */
const storedKey = (bytes: Uint8Array): Key | undefined => {
  if (bytes.length < 4 || bytes.length % 4 !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const size = view.getUint32(0, true)
  const prefix = new Uint32Array(bytes.length / 4 - 1)
  for (let i = 0; i < prefix.length; i++) prefix[i] = view.getUint32(4 * (i + 1), true)
  return prefix.length === prefixLength(size, nearDuplicateThreshold) ? { size, prefix } : undefined
}

/** Whether two ascending prefixes share a number. */
const meet = (a: Uint32Array, b: Uint32Array) => {
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) return true
    if (a[i]! < b[j]!) i++
    else j++
  }
  return false
}

/**
 * Keeps the best-ranked of each group of near-duplicate texts (word-trigram Jaccard ≥ threshold), so the
 * same passage stored twice (two uploads, overlapping chunks) does not fill the results. Returns the kept
 * items in order, each with the ids it absorbed: an item joins the first kept item it is a near duplicate of.
 * Stops once `limit` items are kept: the items after the last kept one are not read.
 * A kept item is counted against only when the sizes allow the threshold and their prefixes meet (prefix
 * filtering); only then are both texts' shingles read and counted. An item's stored `nearKey`
 * (`nearDuplicateKey`) spares reading its text otherwise, at thresholds of at least `nearDuplicateThreshold` (a
 * lower one needs longer prefixes).
 */
export const collapseNearDuplicates = <
  T extends { readonly id: string; readonly text: string; readonly nearKey?: Uint8Array | null }
>(
  items: ReadonlyArray<T>,
  threshold = nearDuplicateThreshold,
  limit = Infinity
): Array<T & { readonly duplicates: ReadonlyArray<string> }> => {
  const stored = threshold >= nearDuplicateThreshold
  const kept: Array<{ item: T; key: Key; shingles: Shingles | undefined; duplicates: Array<string> }> = []
  for (const item of items) {
    if (kept.length >= limit) break
    let shingles: Shingles | undefined
    let key = stored && item.nearKey != null ? storedKey(item.nearKey) : undefined
    if (key === undefined) key = keyOf(shingles = shinglesOf(item.text), threshold)
    const { prefix, size } = key
    const twin = kept.find((other) => {
      if (size === 0 || other.key.size === 0) return size === other.key.size
      if (!sizesAllow(other.key.size, size, threshold) || !meet(other.key.prefix, prefix)) return false
      shingles ??= shinglesOf(item.text)
      other.shingles ??= shinglesOf(other.item.text)
      return jaccard(other.key.size, size, shared(shingles, other.shingles), threshold)
    })
    if (twin !== undefined) twin.duplicates.push(item.id)
    else kept.push({ item, key, shingles, duplicates: [] })
  }
  return kept.map(({ item, duplicates }) => ({ ...item, duplicates }))
}
