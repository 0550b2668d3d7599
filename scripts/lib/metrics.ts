/** Ranking metrics over document ids, with graded relevance (BEIR qrels). */

export const ndcgAt = (ranked: ReadonlyArray<string>, relevant: Map<string, number>, k: number) => {
  const dcg = ranked.slice(0, k).reduce((sum, id, i) => sum + ((2 ** (relevant.get(id) ?? 0)) - 1) / Math.log2(i + 2), 0)
  const ideal = [...relevant.values()].sort((a, b) => b - a).slice(0, k)
    .reduce((sum, grade, i) => sum + ((2 ** grade) - 1) / Math.log2(i + 2), 0)
  return ideal === 0 ? 0 : dcg / ideal
}
export const recallAt = (ranked: ReadonlyArray<string>, relevant: Map<string, number>, k: number) =>
  ranked.slice(0, k).filter((id) => relevant.has(id)).length / relevant.size
export const mrrAt = (ranked: ReadonlyArray<string>, relevant: Map<string, number>, k: number) => {
  const index = ranked.slice(0, k).findIndex((id) => relevant.has(id))
  return index === -1 ? 0 : 1 / (index + 1)
}

export const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1)
