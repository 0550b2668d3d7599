/**
 * compromise as the rules use it, with five of its own methods made cheaper through its plugin interface (same
 * results, test/extract/compromise-plugin.test.ts): on every match it strips accents from the pattern and parses the
 * pattern again, most of them its own fixed patterns: about a fifth of the rules' time on SciFact abstracts; its
 * pattern sweep (post-tagger, chunker) is `sweep.ts`, which picks each sentence's candidate patterns from an index
 * of the net rather than by walking the lists of all the sentence's words and tags; its matcher is skipped for a
 * pattern whose leading words and tags are found in that order nowhere in the sentence; and its `clone` copies
 * only the sentences the view points into.
 */
import nlp from "compromise"
import { sweep } from "./sweep.ts"

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
const parsed = new Map<string, ReadonlyArray<Token>>()
/** Options without keys are no options (and need no JSON text for the key). */
const isEmpty = (options: unknown) => {
  for (const _ in options as object) return false
  return true
}

interface Term {
  readonly id?: unknown
  readonly text: string
  readonly normal: string
  readonly machine: string | null
  readonly alias?: ReadonlyArray<string>
  readonly tags: ReadonlySet<string>
  readonly implicit?: string | null
  readonly root?: string
}
interface Reg {
  readonly start?: boolean
  readonly end?: boolean
  readonly id?: unknown
  readonly word?: string
  readonly use?: string
  readonly fuzzy?: boolean
  readonly tag?: string
  readonly optional?: boolean
  readonly negative?: boolean
  readonly anything?: boolean
  readonly greedy?: boolean
  readonly min?: number
  readonly max?: number
  readonly choices?: unknown
  readonly fastOr?: ReadonlySet<string>
  readonly pos?: string
  readonly method?: unknown
  readonly pre?: unknown
  readonly post?: unknown
  readonly regex?: unknown
  readonly chunk?: unknown
  readonly switch?: unknown
  readonly machine?: unknown
  readonly sense?: unknown
}
interface Todo {
  readonly regs?: ReadonlyArray<Reg>
}

/**
 * False only where compromise's term test of a plain word or tag (its `doesMatch`) is false; true where it cannot
 * tell.
 */
const mayMatch = (term: Term, reg: Reg, index: number, length: number): boolean => {
  if (reg.start === true && index !== 0) return false
  if (reg.end === true && index !== length - 1) return false
  if (reg.id !== undefined && reg.id === term.id) return true
  if (reg.word !== undefined) {
    if (reg.use !== undefined || reg.fuzzy === true) return true
    return term.machine === reg.word || reg.word === term.text || reg.word === term.normal ||
      (term.alias !== undefined && term.alias.includes(reg.word))
  }
  if (reg.tag !== undefined) return term.tags.has(reg.tag)
  if (reg.fastOr !== undefined && !hasOtherTest(reg)) {
    if (reg.pos !== undefined && !term.tags.has(reg.pos)) return false
    return reg.fastOr.has(term.root || term.implicit || term.machine || term.normal) || reg.fastOr.has(term.text)
  }
  return true
}

/** The tests compromise makes before a `(a|b)` list's. */
const hasOtherTest = (reg: Reg) =>
  reg.method !== undefined || reg.pre !== undefined || reg.post !== undefined || reg.regex !== undefined ||
  reg.chunk !== undefined || reg.switch !== undefined || reg.machine !== undefined || reg.sense !== undefined

/** A token that must match the next term: not optional, negative, `.`, a block, or greedy to the end. */
const mustMatch = (reg: Reg) =>
  reg.optional !== true && reg.negative !== true && reg.anything !== true && reg.choices === undefined &&
  !(reg.end === true && reg.greedy === true)

/**
 * How many of a match's leading tokens each test one term in turn: those that must match, up to the first that
 * may match several terms (greedy or counted), which is the last.
 */
const leadingOf = (regs: ReadonlyArray<Reg>): number => {
  let count = 0
  while (count < regs.length && mustMatch(regs[count]!)) {
    const reg = regs[count++]!
    if (reg.greedy === true || reg.min !== undefined || reg.max !== undefined) break
  }
  return count
}

/**
 * False only where compromise's match of `regs` cannot start at `start`: one of its `leading` tokens fails its term
 * (checking stops at a contraction's implied word, which the matcher may skip).
 */
const mayStartAt = (terms: ReadonlyArray<Term>, regs: ReadonlyArray<Reg>, leading: number, start: number) => {
  for (let k = 0; k < leading; k++) {
    const term = terms[start + k]
    if (term === undefined) return true
    if (!mayMatch(term, regs[k]!, start + k, terms.length)) return false
    if (term.implicit !== undefined && term.implicit !== null) return true
  }
  return true
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
      bulkMatch: sweep,
      // Most patterns tried on a sentence (the sweep's candidates) match nowhere, and compromise tries each from
      // every word (copying the rest of the sentence each time); where no word can start the pattern, the matcher
      // has nothing to find.
      match: (docs: ReadonlyArray<ReadonlyArray<Term>>, todo: Todo, cache?: unknown) => {
        const regs = todo.regs
        const leading = regs === undefined ? 0 : leadingOf(regs)
        if (leading === 0) return match(docs, todo, cache)
        for (const terms of docs) {
          for (let i = 0; i < terms.length; i++) {
            if (mayStartAt(terms, regs!, leading, i)) return match(docs, todo, cache)
          }
        }
        return noMatch()
      },
      // Its table maps no ASCII character to another one.
      killUnicode: (text: string, world: World) =>
        typeof text === "string" && ascii.test(text) ? text : killUnicode(text, world),
      // Its callers change no token but the first or last (growLeft, growRight and join mark them start/end), so
      // each call gets a fresh array whose first and last tokens are its own.
      parseMatch: (pattern: unknown, options: unknown, world: World) => {
        if (typeof pattern !== "string") return parseMatch(pattern, options, world)
        const key = options === undefined || options === null || isEmpty(options)
          ? `\u0000${pattern}`
          : `${JSON.stringify(options)}\u0000${pattern}`
        let tokens = parsed.get(key)
        if (tokens === undefined) {
          tokens = parseMatch(pattern, options, world)
          if (parsed.size < maxPatterns) parsed.set(key, tokens)
          else return tokens
        }
        const own = tokens.slice()
        if (own.length > 0) own[0] = { ...own[0] }
        if (own.length > 1) own[own.length - 1] = { ...own[own.length - 1] }
        return own
      }
    }
  }
} as Parameters<typeof nlp.plugin>[0])

export default nlp
