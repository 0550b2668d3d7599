/**
 * A cheap proof that compromise's matcher finds nothing: most patterns tried on a sentence match nowhere, and
 * compromise tries each from every word (copying the rest of the sentence each time). Two necessary conditions are
 * compiled once per pattern into tests of one shape: its leading tokens (those that must each match one term, up
 * to the first that may match several) match in a row somewhere, and every token that must match a term of its own
 * finds one, each after the one before. The pattern is tried only where both hold.
 */

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
 * What a test compares: a word, a tag, a `(a|b)` list of words, a `<Chunk>`, a `%Noun|Verb%` switch, or something it
 * cannot tell from the term.
 */
const Kind = { Word: 0, Tag: 1, Words: 2, Chunk: 3, Switch: 4, Unknown: 5 } as const
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

/** A token that must match the next term: not optional, negative, `.`, a block, or greedy to the end. */
const mustMatch = (reg: Reg) =>
  reg.optional !== true && reg.negative !== true && reg.anything !== true && reg.choices === undefined &&
  !(reg.end === true && reg.greedy === true)

const testOf = (reg: Reg): Test => {
  const kind = reg.word !== undefined
    ? (reg.use !== undefined || reg.fuzzy === true ? Kind.Unknown : Kind.Word)
    : reg.tag !== undefined
    ? Kind.Tag
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
    word: reg.word ?? reg.tag ?? (kind === Kind.Chunk ? String(reg.chunk) : kind === Kind.Switch ? String(reg.switch) : ""),
    words: kind === Kind.Words ? reg.fastOr! : null,
    pos: reg.pos ?? null
  }
}

/**
 * The tests of a pattern's tokens. The leading ones: those that must match, up to the first that may match several
 * terms (greedy or counted), which is the last. The required ones: every token that must match, each of which
 * compromise's matcher gives a term after the previous one's (it may skip terms between them, as after an optional
 * token or a contraction, or match several, but never goes back).
 */
export const testsOf = (regs: ReadonlyArray<Reg>): Tests => {
  const leading: Array<Test> = []
  while (leading.length < regs.length && mustMatch(regs[leading.length]!)) {
    const reg = regs[leading.length]!
    leading.push(testOf(reg))
    if (reg.greedy === true || reg.min !== undefined || reg.max !== undefined) break
  }
  return {
    leading,
    decisive: leading.some((test) => test.kind !== Kind.Unknown),
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
