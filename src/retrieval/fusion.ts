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

const shingles = (text: string): Set<string> => {
  const words = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? []
  const set = new Set<string>()
  if (words.length < 3) {
    if (words.length > 0) set.add(words.join(" "))
    return set
  }
  for (let i = 0; i + 3 <= words.length; i++) set.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`)
  return set
}

/** Jaccard similarity, or 0 early when the sizes alone rule out reaching `threshold`. */
const jaccardAtLeast = (a: Set<string>, b: Set<string>, threshold: number) => {
  if (a.size === 0 && b.size === 0) return true
  const [small, large] = a.size <= b.size ? [a, b] : [b, a]
  if (small.size < threshold * large.size) return false
  let shared = 0
  for (const item of small) if (large.has(item)) shared++
  return shared / (a.size + b.size - shared) >= threshold
}

/**
 * Keeps the best-ranked of each group of near-duplicate texts (word-trigram Jaccard ≥ threshold), so the
 * same passage stored twice (two uploads, overlapping chunks) does not fill the results. Returns the kept
 * items in order, each with the ids it absorbed.
 */
export const collapseNearDuplicates = <T extends { readonly id: string; readonly text: string }>(
  items: ReadonlyArray<T>,
  threshold = 0.9
): Array<T & { readonly duplicates: ReadonlyArray<string> }> => {
  const kept: Array<{ item: T; shingles: Set<string>; duplicates: Array<string> }> = []
  for (const item of items) {
    const own = shingles(item.text)
    const twin = kept.find((k) => jaccardAtLeast(k.shingles, own, threshold))
    if (twin !== undefined) twin.duplicates.push(item.id)
    else kept.push({ item, shingles: own, duplicates: [] })
  }
  return kept.map(({ item, duplicates }) => ({ ...item, duplicates }))
}
