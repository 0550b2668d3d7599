/**
 * compromise's pattern sweep (`methods.one.bulkMatch`, its `sweep/methods/sweep`), the step its post-tagger and
 * chunker spend their time in, with the same patterns tried in the same order. compromise picks a sentence's
 * candidate patterns by testing every one of the net's hook words and tags (thousands) against the sentence and
 * concatenating their lists; here the sentence's own words and tags are looked up instead, in the net's hook order.
 * What follows is compromise's: the first pattern of each match text is kept, then dropped unless the sentence has
 * all its needs, none of its `ifNo` and enough of its wants; the net's always-patterns are added; patterns longer
 * than the sentence are dropped; each is matched, in that order.
 */

export interface SweepTerm {
  readonly normal: string
  readonly tags: ReadonlySet<string>
}

interface Pattern {
  readonly match: string
  readonly needs: ReadonlyArray<string>
  readonly wants: ReadonlyArray<string>
  readonly minWant: number
  readonly minWords: number
  readonly ifNo?: ReadonlyArray<string>
  readonly unTag?: unknown
}

export interface Net {
  readonly hooks: Record<string, ReadonlyArray<Pattern>>
  readonly always: ReadonlyArray<Pattern>
}

interface MatchResult {
  readonly ptrs: ReadonlyArray<Array<number>>
}

export interface SweepMethods {
  readonly one: {
    readonly cacheDoc: (document: ReadonlyArray<ReadonlyArray<SweepTerm>>) => ReadonlyArray<ReadonlySet<string>>
    readonly match: (docs: ReadonlyArray<ReadonlyArray<SweepTerm>>, todo: Pattern) => MatchResult
  }
}

interface HookOrder {
  readonly keys: ReadonlyArray<string>
  readonly ranks: ReadonlyMap<string, number>
}

/** Each net's hook keys in the order of `Object.keys`, the order compromise reads them in. */
const hookOrders = new WeakMap<object, HookOrder>()
const orderOf = (hooks: Net["hooks"]): HookOrder => {
  let order = hookOrders.get(hooks)
  if (order === undefined) {
    const keys = Object.keys(hooks)
    order = { keys, ranks: new Map(keys.map((key, rank) => [key, rank])) }
    hookOrders.set(hooks, order)
  }
  return order
}

/** The patterns to try on one sentence, as compromise's getHooks, trimDown and tooSmall choose them. */
const candidatesOf = (net: Net, order: HookOrder, have: ReadonlySet<string>, words: number): Array<Pattern> => {
  const ranks: Array<number> = []
  for (const item of have) {
    const rank = order.ranks.get(item)
    if (rank !== undefined) ranks.push(rank)
  }
  ranks.sort((a, b) => a - b)
  const seen = new Set<string>()
  const chosen: Array<Pattern> = []
  for (const rank of ranks) {
    for (const pattern of net.hooks[order.keys[rank]!]!) {
      if (seen.has(pattern.match)) continue
      seen.add(pattern.match)
      if (!pattern.needs.every((need) => have.has(need))) continue
      if (pattern.ifNo !== undefined && pattern.ifNo.some((no) => have.has(no))) continue
      if (pattern.wants.length > 0) {
        let found = 0
        for (const want of pattern.wants) if (have.has(want)) found++
        if (found < pattern.minWant) continue
      }
      if (words >= pattern.minWords) chosen.push(pattern)
    }
  }
  for (const pattern of net.always) if (words >= pattern.minWords) chosen.push(pattern)
  return chosen
}

/** compromise's bulkMatch: the matches of the net's patterns in each sentence, in its order. */
export const sweep = (
  document: ReadonlyArray<ReadonlyArray<SweepTerm>>,
  net: Net,
  methods: SweepMethods,
  options: { readonly matchOne?: boolean } = {}
): Array<Pattern & { pointer: Array<number> }> => {
  const order = orderOf(net.hooks)
  const caches = methods.one.cacheDoc(document)
  const results: Array<Pattern & { pointer: Array<number> }> = []
  for (let n = 0; n < document.length; n++) {
    for (const pattern of candidatesOf(net, order, caches[n]!, document[n]!.length)) {
      const found = methods.one.match([document[n]!], pattern)
      if (found.ptrs.length === 0) continue
      for (const pointer of found.ptrs) {
        pointer[0] = n
        // compromise also copies `unTag` again, which Object.assign has copied.
        results.push(Object.assign({}, pattern, { pointer }))
      }
      if (options.matchOne === true) return [results[0]!]
    }
  }
  return results
}
