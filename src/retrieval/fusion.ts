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
 * Weighted reciprocal rank fusion: each list adds weight / (k + rank) for every item it ranks (rank from 1).
 * Scores of different lists are never compared, only ranks, so lists with unrelated score scales fuse well.
 * Ties keep the order of first appearance across the lists (in list order), which makes the result stable.
 */
export const fuseRankings = (lists: ReadonlyArray<RankedList>, k = 60): Array<Fused> => {
  const fused = new Map<string, { score: number; contributions: Array<Contribution>; order: number }>()
  let order = 0
  for (const list of lists) {
    list.hits.forEach((hit, index) => {
      const rank = index + 1
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

const shingles = (text: string, size = 3): Set<string> => {
  const words = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? []
  const set = new Set<string>()
  if (words.length < size) {
    if (words.length > 0) set.add(words.join(" "))
    return set
  }
  for (let i = 0; i + size <= words.length; i++) set.add(words.slice(i, i + size).join(" "))
  return set
}

const jaccard = (a: Set<string>, b: Set<string>) => {
  if (a.size === 0 && b.size === 0) return 1
  let shared = 0
  for (const item of a) if (b.has(item)) shared++
  return shared / (a.size + b.size - shared)
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
    const twin = kept.find((k) => jaccard(k.shingles, own) >= threshold)
    if (twin !== undefined) twin.duplicates.push(item.id)
    else kept.push({ item, shingles: own, duplicates: [] })
  }
  return kept.map(({ item, duplicates }) => ({ ...item, duplicates }))
}
