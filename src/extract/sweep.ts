/**
 * compromise's pattern sweep (`methods.one.bulkMatch`, its `sweep/methods/sweep`), the step its post-tagger and
 * chunker spend their time in, with the same patterns tried in the same order. compromise picks a sentence's
 * candidate patterns by testing every one of the net's hook words and tags (thousands) against the sentence and
 * concatenating their lists; here the match texts filed under the sentence's own words and tags in an index of the
 * net are looked up instead (`Index`). The choice is compromise's: the first pattern of each match text in its lists'
 * order, dropped unless the sentence has all its needs, none of its `ifNo` and enough of its wants; the net's
 * always-patterns added; patterns longer than the sentence dropped; each matched, in that order, by compromise's own
 * matcher where its tokens may match (`leading.ts`).
 */
import { mayMatchIn, type Reg, type Term, type Tests, testsOf } from "./leading.ts"

interface Pattern {
  readonly match: string
  readonly regs: ReadonlyArray<Reg>
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
    readonly cacheDoc: (document: ReadonlyArray<ReadonlyArray<Term>>) => ReadonlyArray<ReadonlySet<string>>
  }
}

/** compromise's matcher, told the pattern's tests (which the sweep has found met in the sentence). */
export type Matcher = (docs: ReadonlyArray<ReadonlyArray<Term>>, todo: Pattern, tests: Tests) => MatchResult

/** A pattern with its tokens' tests (leading.ts). */
interface Candidate {
  readonly pattern: Pattern
  readonly tests: Tests
}

/** One pattern as a hook's list holds it, its words and tags as the index's numbers. */
interface Entry extends Candidate {
  readonly hook: number
  /** Its place in compromise's walk of the lists: by the hook's rank in the net's key order, then in its list. */
  readonly order: number
  readonly needs: Int32Array
  readonly ifNo: Int32Array
  readonly wants: Int32Array
}

/** A word or tag of the net: its number, and the match texts filed under it. */
interface Key {
  readonly id: number
  readonly texts: Array<number>
}

/**
 * A net indexed by match text. compromise lists a pattern under each of its needs and wants (each list keeping the
 * first pattern of a match text) and walks the lists of the sentence's words and tags in key order, so a match
 * text is tried as the pattern of its first entry (by rank, then place) whose hook the sentence has, or not at all
 * if that one fails its filters. A pattern can pass only with each of its needs present, or, needing nothing, one of
 * its wants; each match text is found under those words and tags. The net's words and tags are numbered, so that
 * a sentence's are marked in `present` and a match text looked at is stamped in `looked` (both left clear between
 * sentences).
 */
interface Index {
  readonly entries: ReadonlyArray<ReadonlyArray<Entry>>
  readonly keys: ReadonlyMap<string, Key>
  readonly always: ReadonlyArray<Candidate>
  readonly present: Uint8Array
  readonly looked: Uint8Array
}

/** The need a sentence has least often, by a guess: a word before a tag, then the tag fewest patterns need. */
const keyOf = (needs: ReadonlyArray<string>, hooks: Net["hooks"]): string => {
  let best = needs[0]!
  const cost = (need: string) => (need.startsWith("#") ? 1_000_000 : 0) + (hooks[need]?.length ?? 0)
  for (const need of needs) if (cost(need) < cost(best)) best = need
  return best
}

const indexes = new WeakMap<object, Index>()
const indexOf = (net: Net): Index => {
  const hooks = net.hooks
  let index = indexes.get(net)
  if (index !== undefined) return index
  const texts = new Map<string, number>()
  const entries: Array<Array<Entry>> = []
  const keys = new Map<string, Key>()
  const keyFor = (word: string) => {
    let key = keys.get(word)
    if (key === undefined) keys.set(word, key = { id: keys.size, texts: [] })
    return key
  }
  const ids = (words: ReadonlyArray<string> | undefined) => Int32Array.from(words ?? [], (word) => keyFor(word).id)
  const file = (word: string, text: number) => {
    const list = keyFor(word).texts
    if (!list.includes(text)) list.push(text)
  }
  let order = 0
  Object.keys(hooks).forEach((hook) => {
    hooks[hook]!.forEach((pattern) => {
      let text = texts.get(pattern.match)
      if (text === undefined) {
        text = entries.length
        texts.set(pattern.match, text)
        entries.push([])
      }
      entries[text]!.push({
        hook: keyFor(hook).id,
        order: order++,
        pattern,
        tests: testsOf(pattern.regs),
        needs: ids(pattern.needs),
        ifNo: ids(pattern.ifNo),
        wants: ids(pattern.wants)
      })
      if (pattern.needs.length > 0) file(keyOf(pattern.needs, hooks), text)
      else for (const want of pattern.wants) file(want, text)
    })
  })
  const always = net.always.map((pattern) => ({ pattern, tests: testsOf(pattern.regs) }))
  index = { entries, keys, always, present: new Uint8Array(keys.size), looked: new Uint8Array(entries.length) }
  indexes.set(net, index)
  return index
}

/** compromise's filters of a pattern met by a sentence (its trimDown and tooSmall). */
const passes = (entry: Entry, present: Uint8Array, words: number): boolean => {
  const { needs, ifNo, wants } = entry
  for (let i = 0; i < needs.length; i++) if (present[needs[i]!] === 0) return false
  for (let i = 0; i < ifNo.length; i++) if (present[ifNo[i]!] === 1) return false
  if (wants.length > 0) {
    let found = 0
    for (let i = 0; i < wants.length; i++) found += present[wants[i]!]!
    if (found < entry.pattern.minWant) return false
  }
  return words >= entry.pattern.minWords
}

/** The patterns to try on one sentence, as compromise's getHooks, trimDown and tooSmall choose them. */
const candidatesOf = (index: Index, have: ReadonlySet<string>, words: number): Array<Candidate> => {
  const { entries, present, looked } = index
  const keys: Array<Key> = []
  for (const item of have) {
    const key = index.keys.get(item)
    if (key === undefined) continue
    present[key.id] = 1
    keys.push(key)
  }
  const found: Array<Entry> = []
  const seen: Array<number> = []
  for (const key of keys) {
    for (const text of key.texts) {
      if (looked[text] === 1) continue
      looked[text] = 1
      seen.push(text)
      for (const entry of entries[text]!) {
        if (present[entry.hook] === 0) continue
        if (passes(entry, present, words)) found.push(entry)
        break
      }
    }
  }
  for (const key of keys) present[key.id] = 0
  for (const text of seen) looked[text] = 0
  found.sort((a, b) => a.order - b.order)
  const chosen: Array<Candidate> = found
  for (const candidate of index.always) if (words >= candidate.pattern.minWords) chosen.push(candidate)
  return chosen
}

export interface SweepOptions {
  readonly matchOne?: boolean
}

/** compromise's bulkMatch: the matches of the net's patterns in each sentence, in its order. */
export const sweep = (
  document: ReadonlyArray<ReadonlyArray<Term>>,
  net: Net,
  methods: SweepMethods,
  match: Matcher,
  options: SweepOptions = {}
): Array<Pattern & { pointer: Array<number> }> => {
  const index = indexOf(net)
  const caches = methods.one.cacheDoc(document)
  const results: Array<Pattern & { pointer: Array<number> }> = []
  for (let n = 0; n < document.length; n++) {
    for (const { pattern, tests } of candidatesOf(index, caches[n]!, document[n]!.length)) {
      if (!mayMatchIn(document[n]!, tests)) continue
      const found = match([document[n]!], pattern, tests)
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
