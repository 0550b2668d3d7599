/**
 * compromise as the rules use it, with five of its own methods made cheaper through its plugin interface (same
 * results, test/extract/compromise-plugin.test.ts): on every match it strips accents from the pattern and parses the
 * pattern again, most of them its own fixed patterns: about a fifth of the rules' time on SciFact abstracts; its
 * pattern sweep (post-tagger, chunker) is `sweep.ts`, which picks each sentence's candidate patterns from an index
 * of the net rather than by walking the lists of all the sentence's words and tags; its matcher is skipped for a
 * pattern whose leading words and tags are found in that order nowhere in the sentence (`leading.ts`: the tests are
 * compiled once per pattern the sweep's net or the parse cache holds); and its `clone` copies only the sentences the
 * view points into.
 */
import nlp from "compromise"
import { type Leading, leadingOf, mayMatchIn, type Reg, type Term } from "./leading.ts"
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
/** Parsed patterns by their options' JSON text ("" for none), then by pattern, with their leading tests. */
const parsed = new Map<string, Map<string, { readonly tokens: ReadonlyArray<Token>; readonly leading: Leading }>>()
let parsedCount = 0
/** Options without keys are no options (and need no JSON text for the key). */
const isEmpty = (options: unknown) => {
  for (const _ in options as object) return false
  return true
}
/**
 * The leading tests of a parsed pattern, kept on the array parseMatch hands out; its callers only add start and
 * end marks to its tokens, which make the tests stricter, so the kept ones may only let more patterns through.
 */
const leadingKey = Symbol("leading")
type Regs = ReadonlyArray<Reg> & { [leadingKey]?: Leading }

interface Todo {
  readonly regs?: ReadonlyArray<Reg>
  readonly group?: number
}

const noMatch = () => ({ ptrs: [], byGroup: {} })

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
        sweep(document, net, methods, match as Matcher, options),
      // Where no word can start the pattern (leading.ts), the matcher has nothing to find.
      match: (docs: ReadonlyArray<ReadonlyArray<Term>>, todo: Todo, cache?: unknown) => {
        const regs = todo.regs as Regs | undefined
        const leading = regs === undefined ? [] : regs[leadingKey] ?? leadingOf(regs)
        return leading.length === 0 || docs.some((terms) => mayMatchIn(terms, leading))
          ? match(docs, todo, cache)
          : noMatch()
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
          entry = { tokens, leading: leadingOf(tokens as ReadonlyArray<Reg>) }
          let patterns = parsed.get(key)
          if (patterns === undefined) parsed.set(key, patterns = new Map())
          patterns.set(pattern, entry)
          parsedCount++
        }
        const own = entry.tokens.slice() as Array<Token> & { [leadingKey]?: Leading }
        if (own.length > 0) own[0] = { ...own[0] }
        if (own.length > 1) own[own.length - 1] = { ...own[own.length - 1] }
        own[leadingKey] = entry.leading
        return own
      }
    }
  }
} as Parameters<typeof nlp.plugin>[0])

const world = nlp.world() as unknown as { readonly methods: { readonly one: Methods } }

/**
 * A compromise pattern as a matcher over one piece of a sentence's terms (spans.ts): compromise's own matcher (with
 * the plugin's tests above) run on the piece's terms, as `view.match(pattern, group)` runs it on a view's, its
 * matches (or the group's) given as spans of the sentence. The pattern is parsed once.
 */
export const patternMatcher = (pattern: string, group?: number): SpanMatcher => {
  let regs: unknown
  return (terms, piece) => {
    regs ??= world.methods.one.parseMatch(pattern, undefined, world)
    const found = world.methods.one.match([terms.slice(piece[0], piece[1])] as never, { regs, group } as Todo) as {
      readonly ptrs: ReadonlyArray<ReadonlyArray<number>>
    }
    return found.ptrs.map((pointer) => [piece[0] + pointer[1]!, piece[0] + pointer[2]!] as const)
  }
}

export default nlp
