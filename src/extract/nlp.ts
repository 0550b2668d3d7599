/**
 * compromise as the rules use it, with five of its own methods made cheaper through its plugin interface (same
 * results, test/extract/compromise-plugin.test.ts): on every match it strips accents from the pattern and parses the
 * pattern again, most of them its own fixed patterns: about a fifth of the rules' time on SciFact abstracts; its
 * pattern sweep (post-tagger, chunker) is `sweep.ts`, which picks each sentence's candidate patterns from an index
 * of the net rather than by walking the lists of all the sentence's words and tags; its matcher is skipped for a
 * pattern whose words and tags are not found in its order in the sentence (`leading.ts`: the tests are
 * compiled once per pattern the sweep's net or the parse cache holds); and its `clone` copies only the sentences the
 * view points into.
 */
import nlp from "compromise"
import { mayMatchIn, mayStartAt, type Reg, type Term, type Tests, testsOf } from "./leading.ts"
import type { Matcher as SpanMatcher } from "./spans.ts"
import { type Matcher, type Net, sweep, type SweepMethods, type SweepOptions } from "./sweep.ts"

type Token = Record<string, unknown>
type World = unknown
interface Methods {
  readonly killUnicode: (text: string, world: World) => string
  readonly parseMatch: (pattern: unknown, options: unknown, world: World) => Array<Token>
  readonly match: (docs: ReadonlyArray<ReadonlyArray<Term>>, todo: Todo, cache?: unknown) => unknown
}

const { killUnicode, match, parseMatch } = (nlp.world() as unknown as { readonly methods: { readonly one: Methods } }).methods.one
const ascii = /^[\x00-\x7f]*$/
/** Enough for compromise's own patterns and the rules'; patterns built from the text are not kept past it. */
const maxPatterns = 20_000
/** Parsed patterns by their options' JSON text ("" for none), then by pattern, with their tests. */
const parsed = new Map<string, Map<string, { readonly tokens: ReadonlyArray<Token>; readonly tests: Tests }>>()
let parsedCount = 0
/** Options without keys are no options (and need no JSON text for the key). */
const isEmpty = (options: unknown) => {
  for (const _ in options as object) return false
  return true
}
/**
 * The tests of a parsed pattern, kept on the array parseMatch hands out; its callers only add start and end marks
 * to its tokens, which make the tests stricter, so the kept ones may only let more patterns through.
 */
const testsKey = Symbol("tests")
type Regs = ReadonlyArray<Reg> & { [testsKey]?: Tests }

interface Todo {
  readonly regs?: ReadonlyArray<Reg>
  readonly group?: unknown
  readonly justOne?: boolean
  readonly notIf?: unknown
}

/** A match as compromise points at it: sentence, first term, end (and, in `ptrs`, the first and last terms' ids). */
type Pointer = Array<unknown>
interface Found {
  readonly ptrs: Array<Pointer>
  readonly byGroup: Record<string, Array<Pointer>>
}

const noMatch = (): Found => ({ ptrs: [], byGroup: {} })

/** A token or any token of its blocks anchored at the start ("^"). */
const anchorsStart = (reg: Reg): boolean =>
  reg.start === true ||
  (Array.isArray(reg.choices) &&
    (reg.choices as ReadonlyArray<ReadonlyArray<Reg>>).some((block) => block.some(anchorsStart)))

/**
 * The pattern with its first token anchored, so that compromise's matcher tries it at a piece's first term only, and
 * its loop's bound (the tokens neither optional nor negative): neither changes with the start and end marks.
 */
const anchoredKey = Symbol("anchored")
type Anchorable = ReadonlyArray<Reg> & {
  [anchoredKey]?: { readonly regs: ReadonlyArray<Reg>; readonly minLength: number }
}

/**
 * compromise's matcher (its runMatch) tried only where the pattern's leading tests hold: it tries a pattern from
 * every term of a sentence, each time on a copy of the rest of the sentence, where most patterns can start at a
 * term or two. Here it is run, anchored, on the rest of the sentence from each such term, and its matches are put
 * together as it puts them: in order, each next try after the end of the last match, a group's span or the
 * whole match's, with the first and last terms' ids. A pattern it treats otherwise (anchored itself, or to the
 * end, or with `notIf` or `justOne`), whose leading tests cannot tell where it may start, or asked with a view's
 * word cache (compromise then skips a sentence whose cache lacks a word, which its term test may still find) goes to
 * it whole; the marks are looked for at each call, since compromise's growLeft and growRight add them to a token
 * array they may have matched with before.
 */
const matchWhereLeading = (
  docs: ReadonlyArray<ReadonlyArray<Term>>,
  todo: Todo,
  tests: Tests,
  cache?: unknown
): Found => {
  const regs = todo.regs as Anchorable
  if (
    !tests.decisive || todo.notIf !== undefined || todo.justOne === true || regs.some(anchorsStart) ||
    regs[regs.length - 1]!.end === true || Boolean(cache)
  ) {
    return match(docs, todo, cache) as Found
  }
  const { regs: anchored, minLength } = regs[anchoredKey] ??= {
    regs: [{ ...regs[0]!, start: true }, ...regs.slice(1)],
    minLength: regs.filter((reg) => reg.optional !== true && reg.negative !== true).length
  }
  // compromise's reading: a number names a group, as does any other value but a false one.
  const group = typeof todo.group === "number" || Boolean(todo.group) ? String(todo.group) : ""
  const found = noMatch()
  docs.forEach((terms, n) => {
    for (let i = 0; i < terms.length && terms.length - i >= minLength; i++) {
      if (!mayStartAt(terms, tests.leading, i)) continue
      const one = match([terms.slice(i)], { regs: anchored }) as Found
      const whole = one.ptrs[0]
      if (whole === undefined) continue
      const end = i + (whole[2] as number)
      const shift = (pointer: Pointer): Pointer => [n, i + (pointer[1] as number), i + (pointer[2] as number)]
      if (group !== "") {
        const span = one.byGroup[group]?.[0]
        if (span !== undefined) found.ptrs.push(shift(span))
      } else {
        found.ptrs.push([n, i, end])
        for (const [name, spans] of Object.entries(one.byGroup)) (found.byGroup[name] ??= []).push(shift(spans[0]!))
      }
      if (end - 1 > i) i = end - 1
    }
  })
  for (const pointer of found.ptrs) {
    const terms = docs[pointer[0] as number]!
    pointer[3] = terms[pointer[1] as number]!.id
    pointer[4] = terms[(pointer[2] as number) - 1]!.id
  }
  return found
}

interface Cloneable {
  readonly document: ReadonlyArray<ReadonlyArray<Term>>
  readonly pointer: ReadonlyArray<ReadonlyArray<number>> | undefined
  readonly _cache: unknown
  update: (pointer: unknown) => { document: unknown; _cache: unknown }
}

/**
 * compromise's `clone`, copying only the sentences the view points into: it copied every sentence of the document
 * (and a verb phrase's reading clones three times), though what a clone is then changed through is the view's own
 * sentences; the others are shared with the original.
 */
function cloneOwnSentences(this: Cloneable) {
  const own = this.pointer === undefined || this.pointer === null ? undefined : new Set(this.pointer.map((at) => at[0]))
  const document = this.document.map((terms, n) =>
    own !== undefined && !own.has(n) ? terms : terms.map((term) => ({ ...term, tags: new Set(term.tags) }))
  )
  const view = this.update(this.pointer)
  view.document = document
  view._cache = this._cache
  return view
}

nlp.plugin({
  api: (View: { prototype: Record<string, unknown> }) => {
    View.prototype.clone = cloneOwnSentences
  },
  methods: {
    one: {
      bulkMatch: (document: Parameters<typeof sweep>[0], net: Net, methods: SweepMethods, options?: SweepOptions) =>
        sweep(document, net, methods, matchWhereLeading as Matcher, options),
      // Where the pattern's words and tags are not found in its order (leading.ts), the matcher has nothing to find.
      match: (docs: ReadonlyArray<ReadonlyArray<Term>>, todo: Todo, cache?: unknown) => {
        const regs = todo.regs as Regs | undefined
        if (regs === undefined) return match(docs, todo, cache)
        const tests = regs[testsKey] ?? testsOf(regs)
        return docs.some((terms) => mayMatchIn(terms, tests)) ? matchWhereLeading(docs, todo, tests, cache) : noMatch()
      },
      // Its table maps no ASCII character to another one.
      killUnicode: (text: string, world: World) =>
        typeof text === "string" && ascii.test(text) ? text : killUnicode(text, world),
      // Its callers change no token but the first or last (growLeft, growRight and join mark them start/end), so
      // each call gets a fresh array whose first and last tokens are its own.
      parseMatch: (pattern: unknown, options: unknown, world: World) => {
        if (typeof pattern !== "string") return parseMatch(pattern, options, world)
        const key = options === undefined || options === null || isEmpty(options) ? "" : JSON.stringify(options)
        let entry = parsed.get(key)?.get(pattern)
        if (entry === undefined) {
          const tokens = parseMatch(pattern, options, world)
          if (parsedCount >= maxPatterns) return tokens
          entry = { tokens, tests: testsOf(tokens as ReadonlyArray<Reg>) }
          let patterns = parsed.get(key)
          if (patterns === undefined) parsed.set(key, patterns = new Map())
          patterns.set(pattern, entry)
          parsedCount++
        }
        const own = entry.tokens.slice() as Array<Token> & { [testsKey]?: Tests }
        if (own.length > 0) own[0] = { ...own[0] }
        if (own.length > 1) own[own.length - 1] = { ...own[own.length - 1] }
        own[testsKey] = entry.tests
        return own
      }
    }
  }
} as Parameters<typeof nlp.plugin>[0])

const world = nlp.world() as unknown as { readonly methods: { readonly one: Methods } }

/**
 * A compromise pattern as a matcher over one piece of a sentence's terms (spans.ts): compromise's own matcher (with
 * the plugin's tests above) run on the piece's terms, as `view.match(pattern, group)` runs it on a view's, its
 * matches (or the group's) given as spans of the sentence. The pattern is parsed once; a piece its tests rule out
 * is not copied for the matcher.
 */
export const patternMatcher = (pattern: string, group?: number): SpanMatcher => {
  let regs: Regs | undefined
  let tests: Tests | undefined
  return (terms, piece) => {
    regs ??= world.methods.one.parseMatch(pattern, undefined, world) as Regs
    tests ??= regs[testsKey] ?? testsOf(regs)
    if (!mayMatchIn(terms as ReadonlyArray<Term>, tests, piece[0], piece[1])) return []
    // The piece passed the plugin's test above: the matcher is called past it.
    const found = matchWhereLeading([terms.slice(piece[0], piece[1]) as ReadonlyArray<Term>], { regs, group }, tests)
    return found.ptrs.map((pointer) => [piece[0] + (pointer[1] as number), piece[0] + (pointer[2] as number)] as const)
  }
}

export default nlp
