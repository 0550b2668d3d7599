/**
 * A sentence's verb phrases, read from its tagged terms as compromise's `verbs()` finds them (its `verbs/find.js`,
 * version 14): the runs of words its chunker marks as a verb, then the same removals and splits in the same order;
 * and each phrase read as its `json()` reads it (`readVerbPhrase`). compromise builds a view for each of its steps,
 * and copies the document to read a phrase; here each step maps the sentence's pieces to pieces (spans.ts), and a
 * pattern is tried only on the pieces, with compromise's own matcher.
 */
import nlp, { patternMatcher } from "./nlp.ts"
import {
  anyHas,
  having,
  isWord,
  type Span,
  splitAfter,
  splitBefore,
  splitOn,
  type TaggedTerm,
  type Terms,
  without,
  wordCount
} from "./spans.ts"

const verbChunks = patternMatcher("<Verb>")
const conjunction = patternMatcher("#Conjunction")
const preposition = patternMatcher("#Preposition")
const comma = patternMatcher("@hasComma")
// the reason he will is ..., all i do is talk
const auxiliaryThenCopula = patternMatcher("[(do|did|am|was|is|will)] (is|was)", 0)
// like being pampered
const beingBetweenVerbs = patternMatcher("(#Verb && !#Copula) [being] #Verb", 0)
// like to be pampered
const toBeBetweenVerbs = patternMatcher("#Verb [to be] #Verb", 0)
// help fix
const helpThenVerb = patternMatcher("[help] #PresentTense", 0)
// what i can sell is ...
const tenseThenLastCopula = patternMatcher("(#PresentTense|#PastTense) [#Copula]$", 0)
// what i can sell will be
const tenseThenLastWillBe = patternMatcher("(#PresentTense|#PastTense) [will be]$", 0)
// directing had
const tenseThenHad = patternMatcher("(#PresentTense|#PastTense) [(had|has)]", 0)
// allow yourself
const lastReflexive = patternMatcher("#Reflexive$")
// sitting near
const adjective = patternMatcher("#Adjective")
// Everyone he [met] [told] him
const pastThenPast = patternMatcher("[#PastTense] #PastTense", 0)
// Everyone he [met] had [told] him
const pastThenAuxiliaryPast = patternMatcher("[#PastTense] #Auxiliary+ #PastTense", 0)
// fans that were blowing felt amazing
const gerundThenPast = patternMatcher("#Copula [#Gerund] #PastTense", 0)
const verb = patternMatcher("#Verb")
// held annually is called
const verbThenCopula = patternMatcher("(#Verb && !#Auxiliary) #Adverb+? #Copula")
const copula = patternMatcher("#Copula")

/** The sentence's verb phrases, in order, as spans of its terms. */
export const verbPhrasesOf = (terms: Terms): ReadonlyArray<Span> => {
  let m: ReadonlyArray<Span> = verbChunks(terms, [0, terms.length])
  m = without(terms, m, conjunction)
  m = without(terms, m, preposition)
  m = splitAfter(terms, m, comma)
  m = splitAfter(terms, m, auxiliaryThenCopula)
  m = splitBefore(terms, m, beingBetweenVerbs)
  m = splitBefore(terms, m, toBeBetweenVerbs)
  m = splitAfter(terms, m, helpThenVerb)
  m = splitBefore(terms, m, tenseThenLastCopula)
  m = splitBefore(terms, m, tenseThenLastWillBe)
  m = splitBefore(terms, m, tenseThenHad)
  m = without(terms, m, lastReflexive)
  m = without(terms, m, adjective)
  m = splitAfter(terms, m, pastThenPast)
  m = splitAfter(terms, m, pastThenAuxiliaryPast)
  m = splitAfter(terms, m, gerundThenPast)
  m = having(terms, m, verb)
  // Any phrase with a verb before a copula splits every phrase before its copulas.
  if (anyHas(terms, m, verbThenCopula)) m = splitBefore(terms, m, copula)
  return m
}

/** What the rules read of a verb phrase: what compromise's `verbs().json()` gives as `verb`, in part. */
export interface VerbReading {
  readonly infinitive: string
  readonly negative: boolean
  readonly grammar: {
    readonly form?: string
    readonly tense: string
    readonly passive?: boolean
    readonly isInfinitive: boolean
  }
}

type FormData = { readonly tense?: string; readonly passive?: boolean }
const present = { tense: "PresentTense" }
const past = { tense: "PastTense" }
const future = { tense: "FutureTense" }
const passivePast = { tense: "PastTense", passive: true }
const passivePresent = { tense: "PresentTense", passive: true }
const passiveFuture = { tense: "FutureTense", passive: true }

/**
 * compromise's verb forms (`verbs/api/parse/grammar/forms.js`), in its order: the first whose pattern a phrase has
 * names its form; only the data the rules read (tense, passive) is kept. Nine of the patterns need no anchor.
 */
const forms: ReadonlyArray<readonly [name: string, pattern: string, data: FormData]> = [
  ["imperative", "#Imperative", {}],
  ["want-infinitive", "^(want|wants|wanted) to #Infinitive$", present],
  ["want-infinitive", "^wanted to #Infinitive$", past],
  ["want-infinitive", "^will want to #Infinitive$", future],
  ["gerund-phrase", "^#PastTense #Gerund$", past],
  ["gerund-phrase", "^#PresentTense #Gerund$", present],
  ["gerund-phrase", "^#Infinitive #Gerund$", present],
  ["gerund-phrase", "^will #Infinitive #Gerund$", future],
  ["gerund-phrase", "^have #PastTense #Gerund$", past],
  ["gerund-phrase", "^will have #PastTense #Gerund$", past],
  ["simple-present", "^#PresentTense$", present],
  ["simple-present", "^#Infinitive$", present],
  ["simple-past", "^#PastTense$", past],
  ["simple-future", "^will #Adverb? #Infinitive", future],
  ["present-progressive", "^(is|are|am) #Gerund$", present],
  ["past-progressive", "^(was|were) #Gerund$", past],
  ["future-progressive", "^will be #Gerund$", future],
  ["present-perfect", "^(has|have) #PastTense$", past],
  ["past-perfect", "^had #PastTense$", past],
  ["past-perfect", "^had #PastTense to #Infinitive", past],
  ["future-perfect", "^will have #PastTense$", future],
  ["present-perfect-progressive", "^(has|have) been #Gerund$", past],
  ["past-perfect-progressive", "^had been #Gerund$", past],
  ["future-perfect-progressive", "^will have been #Gerund$", future],
  ["passive-past", "(got|were|was) #Passive", passivePast],
  ["passive-past", "^(was|were) being #Passive", passivePast],
  ["passive-past", "^(had|have) been #Passive", passivePast],
  ["passive-present", "^(is|are|am) #Passive", passivePresent],
  ["passive-present", "^(is|are|am) being #Passive", passivePresent],
  ["passive-present", "^has been #Passive", passivePresent],
  ["passive-future", "will have been #Passive", passiveFuture],
  ["passive-future", "will be being? #Passive", passiveFuture],
  ["present-conditional", "would be #PastTense", present],
  ["past-conditional", "would have been #PastTense", past],
  ["auxiliary-future", "(is|are|am|was) going to (#Infinitive|#PresentTense)", future],
  ["auxiliary-past", "^did #Infinitive$", past],
  ["auxiliary-past", "^used to #Infinitive$", past],
  ["auxiliary-present", "^(does|do) #Infinitive$", present],
  ["modal-past", "^(could|must|should|shall) have #PastTense$", past],
  ["modal-infinitive", "^#Modal #Infinitive$", {}],
  ["infinitive", "^#Infinitive$", {}]
].map(([name, pattern, data]) => [name as string, pattern as string, data as FormData] as const)
const formMatchers = forms.map(([name, pattern, data]) => ({ name, data, has: patternMatcher(pattern) }))

const auxiliaryWords = patternMatcher("(#Negative|#Auxiliary|#Modal|#Adverb|#Prefix)")
const phrasalParticle = patternMatcher("#Phrasal #Particle")
const wantTo = patternMatcher("(want|wants|wanted) to")
const negative = patternMatcher("#Negative")
const adverb = patternMatcher("#Adverb")
const phrasalVerbParticle = patternMatcher("#PhrasalVerb #Particle")
const lastParticle = patternMatcher("#Particle$")
const loneVerb = patternMatcher("^#Verb$")
const infinitive = patternMatcher("#Infinitive")
const toInfinitiveAtStart = patternMatcher("^to #Infinitive")
const pastTense = patternMatcher("#PastTense")
/** compromise's `getTense` of a main verb: the first of these tags it has. */
const tenses = ["Infinitive", "Participle", "PastTense", "Gerund", "PresentTense"]
  .map((tag) => ({ tag, has: patternMatcher(`#${tag}`) }))

/** The phrase's main verb (compromise's `getMain`): its words but auxiliaries and adverbs, the last piece of them. */
const rootOf = (terms: Terms, phrase: Span): ReadonlyArray<Span> => {
  let root: ReadonlyArray<Span> = [phrase]
  if (wordCount(terms, phrase[0], phrase[1]) > 1) root = without(terms, root, auxiliaryWords)
  if (root.length > 1 && !anyHas(terms, root, phrasalParticle)) root = [root[root.length - 1]!]
  root = without(terms, root, wantTo)
  return root.length > 0 ? root : without(terms, [phrase], negative)
}

/** The adverbs before and after the main verb (compromise's `getAdverbs`), as term indexes. */
const adverbsAround = (terms: Terms, phrase: Span, root: ReadonlyArray<Span>): Array<number> => {
  if (!anyHas(terms, [phrase], adverb)) return []
  const parts = splitOn(terms, [phrase], (_, piece) => root.filter((span) => span[0] >= piece[0] && span[1] <= piece[1]))
  const adverbsIn = (part: Span | undefined) => part === undefined ? [] : adverb(terms, part).map((span) => span[0])
  if (parts.length === 3) return [...adverbsIn(parts[0]), ...adverbsIn(parts[2])]
  const first = parts[0]!
  if (root[0] !== undefined && first[0] === root[0][0] && first[1] === root[0][1]) return adverbsIn(parts[1])
  return adverbsIn(first)
}

// compromise's text('normal') of a view (output/api/_text.js and text.js).
const trimEnd = /[,:;)\]*.?~!\u0022\uFF02\u201D\u2019\u00BB\u203A\u2032\u2033\u2034\u301E\u00B4—-]+$/
const trimStart =
  /^[(['"*~\uFF02\u201C\u2018\u201F\u201B\u201E\u2E42\u201A\u00AB\u2039\u2035\u2036\u2037\u301D\u0060\u301F]+/
const punctuationToDrop = /[,:;)('"\u201D\]]/
const hyphen = /^[-–—]$/

/**
 * The normal text of some pieces of a sentence, as compromise's `text("normal")` gives a view of them: each word's
 * normal form with some of its punctuation; trimmed unless the pieces are the whole document, and without leading or
 * trailing punctuation unless they start the sentence.
 */
const normalText = (terms: Terms, pieces: ReadonlyArray<Span>, whole: boolean) => {
  let text = ""
  for (const [start, end] of pieces) {
    for (let k = start; k < end; k++) {
      const term = terms[k]!
      let pre = (term.pre || "").replace(trimStart, "")
      let post = term.post || ""
      if (hyphen.test(post)) post = " "
      post = post.replace(punctuationToDrop, "").replace(/\?!+/, "?").replace(/!+/, "!").replace(/\?+/, "?")
        .replace(/\.{2,}/, "")
      if (term.tags.has("Abbreviation")) post = post.replace(/\./, "")
      pre = pre.replace(/\s/, "")
      post = post.replace(/\s+/, " ")
      text += pre + (term.normal || "") + post
    }
  }
  if (!whole) text = text.trim()
  if (pieces[0]![0] !== 0) {
    if (!terms[pieces[0]![0]]!.tags.has("Emoticon")) text = text.replace(trimStart, "")
    const last = pieces[pieces.length - 1]!
    if (!terms[last[1] - 1]!.tags.has("Emoticon")) text = text.replace(trimEnd, "")
    if (text.endsWith("'") && !text.endsWith("s'")) text = text.replace(/'/, "")
  }
  return text
}

const { toInfinitive } = (nlp.world() as unknown as {
  readonly methods: {
    readonly two: {
      readonly transform: {
        readonly verb: { readonly toInfinitive: (text: string, model: unknown, tense: string | undefined) => string }
      }
    }
  }
}).methods.two.transform.verb
const model = nlp.model()

/** The class of compromise's verb-phrase views (what `verbs()` returns), to ask compromise itself for a reading. */
const VerbsView = (nlp("walk").verbs() as unknown as {
  readonly constructor: new(document: unknown, pointer: ReadonlyArray<ReadonlyArray<number>>) => {
    readonly json: (options: unknown) => ReadonlyArray<{ readonly verb: VerbReading }>
  }
}).constructor

/**
 * compromise's own reading of a phrase of the `sentenceIndex`th sentence of a parsed `document` (its `verbs().json()`,
 * without the text and terms): for a phrase with a contraction, and to compare `readVerbPhrase` with.
 */
export const compromiseReading = (document: unknown, sentenceIndex: number, phrase: Span): VerbReading | undefined =>
  new VerbsView(document, [[sentenceIndex, phrase[0], phrase[1]]]).json({ text: false, terms: false })[0]?.verb

/**
 * What compromise's `verbs().json()` reads of a phrase of the sentence (its `toJSON`, `parseVerb` and `getGrammar`):
 * the infinitive of its main verb, whether it is negated, and its form and tense from the first of compromise's forms
 * it has once its adverbs, negatives and prefixes are left out. `documentTerms` is the number of terms of the whole
 * text parsed with the sentence (compromise trims a text that is not all of it). Null for a phrase with a contraction,
 * which compromise expands first ("didn't" → "did not"): the caller asks compromise (`compromiseReading`).
 */
export const readVerbPhrase = (
  terms: Terms,
  phrase: Span,
  sentenceIndex: number,
  documentTerms: number
): VerbReading | null => {
  for (let k = phrase[0]; k < phrase[1]; k++) if (terms[k]!.implicit) return null
  const root = rootOf(terms, phrase)
  // The phrase without its outer adverbs, negatives, prefixes and a phrasal verb's particle (compromise removes
  // them from a copy, so the rest is one run of words), then split at its other adverbs.
  const dropped = new Set(adverbsAround(terms, phrase, root))
  for (let k = phrase[0]; k < phrase[1]; k++) {
    if (terms[k]!.tags.has("Negative") || terms[k]!.tags.has("Prefix")) dropped.add(k)
  }
  let kept: Array<TaggedTerm> = []
  for (let k = phrase[0]; k < phrase[1]; k++) if (!dropped.has(k)) kept.push(terms[k]!)
  if (anyHas(terms, root, phrasalVerbParticle) && kept.length > 0 && lastParticle(kept, [0, kept.length]).length > 0) {
    kept = kept.slice(0, -1)
  }
  // The word before the phrase stays in front of it, for "to" ("learned to code").
  const before = phrase[0] > 0 ? [terms[phrase[0] - 1]!] : []
  const cleaned = [...before, ...kept]
  const pieces = without(cleaned, kept.length === 0 ? [] : [[before.length, cleaned.length]], adverb)
  const form = formMatchers.find((one) => anyHas(cleaned, pieces, one.has))
  // 'learn to code': with a "to" right before it taken in, a piece opens with "to" and an infinitive.
  const isInfinitive = anyHas(cleaned, pieces, infinitive) &&
    anyHas(
      cleaned,
      pieces.map(([start, end]) => [start > 0 && isWord(cleaned[start - 1], "to") ? start - 1 : start, end] as const),
      toInfinitiveAtStart
    )
  const rootTerms = root.reduce((count, [start, end]) => count + end - start, 0)
  const whole = sentenceIndex === 0 && rootTerms === documentTerms
  const tense = tenses.find((one) => anyHas(terms, root, one.has))?.tag
  return {
    infinitive: toInfinitive(normalText(terms, root, whole), model, tense),
    negative: anyHas(terms, [phrase], negative),
    grammar: {
      ...(form !== undefined
        ? { form: form.name }
        : anyHas(cleaned, pieces, loneVerb)
        ? { form: "infinitive" }
        : {}),
      tense: form?.data.tense ?? (anyHas(terms, root, pastTense) ? "PastTense" : "PresentTense"),
      ...(form?.data.passive === true ? { passive: true } : {}),
      isInfinitive
    }
  }
}
