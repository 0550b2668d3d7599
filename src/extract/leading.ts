/**
 * A cheap proof that compromise's matcher finds nothing: most patterns tried on a sentence match nowhere, and
 * compromise tries each from every word (copying the rest of the sentence each time). Two necessary conditions are
 * compiled once per pattern into tests of one shape: its leading tokens (those that must each match one term, up
 * to the first that may match several) match in a row somewhere, and every token that must match a term of its own
 * finds one, each after the one before. The pattern is tried only where both hold.
 */

import nlp from "compromise"

/** A term as compromise holds it (what the tests read). */
export interface Term {
  readonly id?: unknown
  readonly text: string
  readonly normal: string
  readonly machine: string | null
  readonly alias?: ReadonlyArray<string>
  readonly tags: ReadonlySet<string>
  readonly implicit?: string | null
  readonly root?: string
  readonly chunk?: string
  readonly switch?: string
}

/** A pattern's token as compromise's parseMatch makes it. */
export interface Reg {
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
  readonly operator?: string
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

/**
 * What a test compares: a word, a tag, a `(a|b)` list of words, a `<Chunk>`, a `%Noun|Verb%` switch, an `@method`
 * of compromise's, the first term of a block's choices (`(#Noun|#Verb foo)`: any; `(#Noun && @hasComma)`: all), or
 * something it cannot tell from the term.
 */
const Kind = { Word: 0, Tag: 1, Words: 2, Chunk: 3, Switch: 4, Method: 5, AnyOf: 6, AllOf: 7, Unknown: 8 } as const
type Kind = typeof Kind[keyof typeof Kind]

/** One leading token's term test. */
interface Test {
  readonly kind: Kind
  readonly start: boolean
  readonly end: boolean
  readonly id: unknown
  readonly word: string
  readonly words: ReadonlySet<string> | null
  readonly pos: string | null
  /** A block's: the tests of its choices' first tokens. */
  readonly choices: ReadonlyArray<Test> | null
}

/** A pattern's tests. */
export interface Tests {
  /** Its leading tokens'; empty when its first token is not one (optional, negative, a block, …). */
  readonly leading: ReadonlyArray<Test>
  /** Whether one of the leading tests can fail (is not `Unknown`): only then do they tell where a match may start. */
  readonly decisive: boolean
  /** Those of all the tokens that must match a term of their own, in order. */
  readonly required: ReadonlyArray<Test>
}

/** Tests compromise makes before a `<Chunk>`'s, then before a switch's, then before a `(a|b)` list's. */
const beforeChunk = (reg: Reg) =>
  reg.method !== undefined || reg.pre !== undefined || reg.post !== undefined || reg.regex !== undefined
const beforeSwitch = (reg: Reg) => beforeChunk(reg) || reg.chunk !== undefined
const hasOtherTest = (reg: Reg) =>
  beforeSwitch(reg) || reg.switch !== undefined || reg.machine !== undefined || reg.sense !== undefined

/** A token that must match the next term (a block: one or more): not optional, negative, `.` or greedy to the end. */
const mustMatch = (reg: Reg) =>
  reg.optional !== true && reg.negative !== true && reg.anything !== true && !(reg.end === true && reg.greedy === true)

/** The term methods compromise's `@hasComma` and the like call (the object its matcher reads). */
const termMethods = (nlp.world() as unknown as {
  readonly methods: { readonly one: { readonly termMethods: Record<string, unknown> } }
}).methods.one.termMethods

const unknown: Test = {
  kind: Kind.Unknown, start: false, end: false, id: undefined, word: "", words: null, pos: null, choices: null
}

/**
 * A block's test: compromise's matcher (its doOrBlock, doAndBlock) takes a block at a term when the first token of
 * one of its choices (`or`) or of all of them (`and`) matches the term by its term test (whatever its `?`; a `!`
 * choice, whose test is turned around, or a block in a block it cannot tell), and the block's own `^` it does not
 * read.
 */
const blockTestOf = (reg: Reg): Test => {
  const choices = reg.choices
  if (
    (reg.operator !== "or" && reg.operator !== "and") || !Array.isArray(choices) || choices.length === 0 ||
    !choices.every((choice) => Array.isArray(choice) && choice.length > 0)
  ) {
    return unknown
  }
  const firsts = (choices as ReadonlyArray<ReadonlyArray<Reg>>).map((choice) =>
    choice[0]!.choices === undefined && choice[0]!.negative !== true ? testOf(choice[0]!) : unknown
  )
  return { ...unknown, kind: reg.operator === "or" ? Kind.AnyOf : Kind.AllOf, choices: firsts }
}

const testOf = (reg: Reg): Test => {
  if (reg.choices !== undefined) return blockTestOf(reg)
  const kind = reg.word !== undefined
    ? (reg.use !== undefined || reg.fuzzy === true ? Kind.Unknown : Kind.Word)
    : reg.tag !== undefined
    ? Kind.Tag
    : reg.method !== undefined
    ? Kind.Method
    : reg.chunk !== undefined && !beforeChunk(reg)
    ? Kind.Chunk
    : reg.switch !== undefined && !beforeSwitch(reg)
    ? Kind.Switch
    : reg.fastOr !== undefined && !hasOtherTest(reg)
    ? Kind.Words
    : Kind.Unknown
  return {
    kind,
    start: reg.start === true,
    end: reg.end === true,
    id: reg.id,
    word: reg.word ?? reg.tag ?? String(
      kind === Kind.Method ? reg.method : kind === Kind.Chunk ? reg.chunk : kind === Kind.Switch ? reg.switch : ""
    ),
    words: kind === Kind.Words ? reg.fastOr! : null,
    pos: reg.pos ?? null,
    choices: null
  }
}

/** Whether a test can fail on some term. */
const canFail = (test: Test): boolean =>
  test.kind === Kind.AnyOf
    ? test.choices!.every(canFail)
    : test.kind === Kind.AllOf
    ? test.choices!.some(canFail)
    : test.kind !== Kind.Unknown || test.start || test.end

/**
 * The tests of a pattern's tokens. The leading ones: those that must match, up to the first that may match several
 * terms (greedy, counted or a block), which is the last. The required ones: every token that must match, each of which
 * compromise's matcher gives a term after the previous one's (it may skip terms between them, as after an optional
 * token or a contraction, or match several, but never goes back).
 */
export const testsOf = (regs: ReadonlyArray<Reg>): Tests => {
  const leading: Array<Test> = []
  while (leading.length < regs.length && mustMatch(regs[leading.length]!)) {
    const reg = regs[leading.length]!
    leading.push(testOf(reg))
    if (reg.greedy === true || reg.min !== undefined || reg.max !== undefined || reg.choices !== undefined) break
  }
  return {
    leading,
    decisive: leading.some(canFail),
    required: regs.filter(mustMatch).map(testOf)
  }
}

/** False only where compromise's term test (its `doesMatch`) is false; true where it cannot tell. */
const mayMatch = (term: Term, test: Test, index: number, length: number): boolean => {
  if (test.start && index !== 0) return false
  if (test.end && index !== length - 1) return false
  if (test.id !== undefined && test.id === term.id) return true
  switch (test.kind) {
    case Kind.Word:
      return term.machine === test.word || test.word === term.text || test.word === term.normal ||
        (term.alias !== undefined && term.alias.includes(test.word))
    case Kind.Tag:
      return term.tags.has(test.word)
    case Kind.Words:
      if (test.pos !== null && !term.tags.has(test.pos)) return false
      return test.words!.has(term.root || term.implicit || term.machine || term.normal) || test.words!.has(term.text)
    case Kind.Chunk:
      return term.chunk === test.word
    case Kind.Switch:
      return term.switch === test.word
    case Kind.Method: {
      const method = termMethods[test.word]
      return typeof method === "function" && method(term) === true
    }
    case Kind.AnyOf:
      for (const choice of test.choices!) if (mayMatch(term, choice, index, length)) return true
      return false
    case Kind.AllOf:
      for (const choice of test.choices!) if (!mayMatch(term, choice, index, length)) return false
      return true
    default:
      return true
  }
}

/**
 * False only where compromise's match cannot start at `start`: one of the leading tokens fails its term (checking
 * stops at a contraction's implied word, which the matcher may skip). The terms are those from `from` to `to` (a
 * piece of a sentence: its first term is at index 0 for a test, its length the piece's).
 */
export const mayStartAt = (
  terms: ReadonlyArray<Term>,
  leading: ReadonlyArray<Test>,
  start: number,
  from = 0,
  to = terms.length
): boolean => {
  for (let k = 0; k < leading.length; k++) {
    const at = start + k
    if (at >= to) return true
    const term = terms[at]!
    if (!mayMatch(term, leading[k]!, at - from, to - from)) return false
    if (term.implicit !== undefined && term.implicit !== null) return true
  }
  return true
}

/** Each required test met by a later term than the one before. */
const mayMeetAll = (terms: ReadonlyArray<Term>, required: ReadonlyArray<Test>, from: number, to: number) => {
  let at = from
  for (const test of required) {
    while (at < to && !mayMatch(terms[at]!, test, at - from, to - from)) at++
    if (at === to) return false
    at++
  }
  return true
}

/** False only where compromise's match of a pattern with these tests finds nothing in the terms from `from` to `to`. */
export const mayMatchIn = (terms: ReadonlyArray<Term>, tests: Tests, from = 0, to = terms.length): boolean => {
  if (tests.leading.length > 0) {
    let found = false
    for (let i = from; i < to && !found; i++) found = mayStartAt(terms, tests.leading, i, from, to)
    if (!found) return false
  }
  return mayMeetAll(terms, tests.required, from, to)
}
