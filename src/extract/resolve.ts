/**
 * Entity resolution keys: how a name is normalised and under which keys an entity can be matched, within a
 * document (extract/rules.ts) and across the documents of a source (the graph store). Pure.
 */
import type { EntityKind } from "./Extraction.ts"

const titles = new Set([
  "mr",
  "mrs",
  "ms",
  "miss",
  "mx",
  "dr",
  "doctor",
  "prof",
  "professor",
  "sir",
  "dame",
  "lord",
  "lady",
  "rev",
  "reverend",
  "hon",
  "madam",
  "mme",
  "mlle",
  "herr",
  "frau"
])

/** Words left out of an organization's initials ("Bank of America" → "ba" as well as "boa"). */
const initialsStopWords = new Set(["of", "and", "the", "for", "de", "la", "le", "du", "der", "und", "in", "on", "at", "to"])

/** Legal-form words an organization's name may carry or drop ("Acme Corp" is "Acme"). */
const corporateSuffixes = new Set([
  "inc",
  "incorporated",
  "corp",
  "corporation",
  "co",
  "company",
  "ltd",
  "limited",
  "llc",
  "llp",
  "plc",
  "gmbh",
  "ag",
  "sa",
  "nv",
  "bv",
  "srl",
  "spa",
  "group",
  "holdings"
])

/**
 * The resolution key of a name: accents folded, lowercased, possessive 's and leading titles (Mr., Dr., Prof.…)
 * and a leading "the" removed, dots and apostrophes dropped ("J.P." → "jp"), other punctuation as spaces,
 * whitespace collapsed.
 */
export const normalizeName = (name: string): string => {
  const folded = name
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc`´]/g, "'")
    .replace(/'s\b/g, "")
    .replace(/s'(?=\s|$)/g, "s")
    .replace(/[.']/g, "")
    .replace(/&/g, " and ")
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()
  const tokens = folded.length === 0 ? [] : folded.split(" ")
  let first = 0
  while (first < tokens.length - 1 && (titles.has(tokens[first]!) || (first === 0 && tokens[first] === "the"))) first++
  return tokens.slice(first).join(" ")
}

/** The initials of a multi-word organization name, with and without its small words; none for one word. */
export const organizationAcronyms = (name: string): ReadonlyArray<string> => {
  const tokens = withoutCorporateSuffix(normalizeName(name)).split(" ").filter((token) => token.length > 0)
  if (tokens.length < 2) return []
  const significant = tokens.filter((token) => !initialsStopWords.has(token))
  const all = tokens.map((token) => token[0]).join("")
  const initials = significant.map((token) => token[0]).join("")
  return [...new Set([initials, all])].filter((acronym) => acronym.length >= 2)
}

/** A normalised organization name without its trailing legal form ("acme corp" → "acme"). */
export const withoutCorporateSuffix = (key: string): string => {
  const tokens = key.split(" ")
  let end = tokens.length
  while (end > 1 && corporateSuffixes.has(tokens[end - 1]!)) end--
  return tokens.slice(0, end).join(" ")
}

/** Whether a normalised person name is a full name: two words or more, not starting with a lone initial. */
const isFullPersonKey = (key: string) => {
  const tokens = key.split(" ")
  return tokens.length >= 2 && tokens[0]!.length > 1
}

/**
 * Every key the entity can be matched under: its normalised name and aliases; for an organization also its
 * name without the legal form and the acronym of a multi-word name; for a person only full names, so that a
 * lone "Smith" or "J. Smith" never joins two different people across documents.
 */
export const matchKeys = (entity: {
  readonly name: string
  readonly kind: EntityKind
  readonly aliases: ReadonlyArray<string>
}): ReadonlyArray<string> => {
  const name = normalizeName(entity.name)
  const aliases = entity.aliases.map(normalizeName)
  const keys: Array<string> = [name]
  if (entity.kind === "person") {
    keys.push(...aliases.filter(isFullPersonKey))
  } else if (entity.kind === "organization") {
    for (const key of [name, ...aliases]) keys.push(key, withoutCorporateSuffix(key))
    keys.push(...organizationAcronyms(entity.name))
  } else {
    keys.push(...aliases)
  }
  return [...new Set(keys)].filter((key) => key.length > 0)
}

/** Kinds that may name the same thing: equal, or one of them undetermined ("other") or abstract ("concept"). */
export const compatibleKinds = (a: EntityKind, b: EntityKind): boolean =>
  a === b || a === "other" || b === "other" || a === "concept" || b === "concept"

/**
 * Two entities (of one source) are the same when they share a match key (other than initials of both) and their
 * kinds are compatible: "Jordan" the person and "Jordan" the place share a key but stay apart.
 */
export const sameEntity = (
  a: { readonly name: string; readonly kind: EntityKind; readonly aliases: ReadonlyArray<string> },
  b: { readonly name: string; readonly kind: EntityKind; readonly aliases: ReadonlyArray<string> }
): boolean => {
  if (!compatibleKinds(a.kind, b.kind)) return false
  const keys = new Set(matchKeys(a))
  return matchKeys(b).some((key) => keys.has(key) && !initialsOfBoth(key, a.name, b.name))
}

/**
 * The key is the initials of both names ("gm" of General Motors and of General Mills): that links nothing, since
 * two long names may share initials. Initials link a long name only to the acronym itself ("GM").
 */
export const initialsOfBoth = (key: string, a: string, b: string): boolean =>
  organizationAcronyms(a).includes(key) && organizationAcronyms(b).includes(key)

/** A diminutive ending a short form may add to the part of the name it keeps ("Tommy", "Maggie", "Kolya"). */
const diminutiveEnding = /(?:ie|ey|y|i|o|a|s|sy|ya|yo|ka)$/

/** A word with its elongation undone ("Tommyyy" → "Tommy"). */
const collapsed = (word: string) => word.replace(/(\p{L})\1{2,}/gu, "$1")

/** The part of a short form that comes from the name: elongation undone ("Tommyyy"), a diminutive ending dropped. */
const stemsOf = (short: string): ReadonlyArray<string> => {
  const word = collapsed(short)
  const stems = [word]
  const half = word.slice(0, word.length / 2)
  if (word.length >= 4 && word.length % 2 === 0 && half + half === word) stems.push(half)
  const bare = word.replace(diminutiveEnding, "")
  if (bare !== word && bare.length >= 2) stems.push(bare, bare.replace(/(\p{L})\1$/u, "$1"))
  return stems.filter((stem) => stem.length >= 2)
}

/** Whether `stem` spells the name's opening sounds: its letters in order, the first two at the start ("Mag", "Hal"). */
const spellsOpening = (stem: string, name: string) => {
  if (name[0] !== stem[0]) return false
  const relaxed = name.length > 2 && name[1] === "h" ? name[0] + name.slice(2) : name
  if (relaxed.startsWith(stem) || name.startsWith(stem)) return true
  if (stem.length < 3 || name[1] !== stem[1]) return false
  let at = 2
  for (const letter of stem.slice(2)) {
    at = name.indexOf(letter, at) + 1
    if (at === 0) return false
  }
  return true
}

/**
 * Whether a one-word short form or nickname can stand for a first name: a shorter form of it ("Mel" for Melanie,
 * "Deb" for Deborah, "Tom"/"Tommy" for Thomas, "Maggie" for Margaret, "Hal" for Harold), or a diminutive of its
 * middle ("Lena" for Elena, "Kolya" for Nikolai). Both normalised (normalizeName), one word each.
 */
export const shortFormFits = (short: string, firstName: string): boolean => {
  if (short.length < 2 || short === firstName || short.includes(" ") || firstName.includes(" ")) return false
  return stemsOf(short).some((stem) =>
    stem.length <= firstName.length &&
    (spellsOpening(stem, firstName) || (stem.length >= 3 && firstName.slice(1).includes(stem)))
  )
}

/** Whether a one-word name is the first name itself or fits it as a short form (both normalised). */
export const standsFor = (word: string, firstName: string): boolean =>
  word === firstName || shortFormFits(word, firstName)

/** The one word a person (or an entity of undetermined kind) is called by when its name is one word, else null. */
export const shortFormOf = (entity: { readonly name: string; readonly kind: EntityKind }): string | null => {
  const key = normalizeName(entity.name)
  return (entity.kind === "person" || entity.kind === "other") && key.length >= 2 && !key.includes(" ") ? key : null
}

/**
 * LIKE patterns that every first name a one-word name may stand for (personForShortForm: the same word, or a name
 * it fits as a short form) matches: opening with its first two letters, or with its first letter, an "h" and its
 * second ("Tom" for Thomas), or holding its first three letters after the name's first letter (a diminutive of
 * the middle). A superset, for the key index to narrow by; what it finds is checked with the rule itself. Words
 * from normalizeName hold no LIKE wildcards; one with a letter beyond the Basic Multilingual Plane (where the rule
 * compares UTF-16 units) gets "%".
 */
export const shortFormPatterns = (short: string): ReadonlyArray<string> => {
  if (/[\u{10000}-\u{10FFFF}]/u.test(short)) return ["%"]
  const word = collapsed(short)
  const patterns = new Set<string>()
  for (const form of [short, word]) {
    patterns.add(form.length < 2 ? `${form}%` : `${form[0]}${form[1]}%`)
    if (form.length >= 2) patterns.add(`${form[0]}h${form[1]}%`)
  }
  if (word.length >= 3) patterns.add(`_%${word.slice(0, 3)}%`)
  return [...patterns]
}

/**
 * The person a one-word name stands for: the only one, among the persons' match keys, whose first name it is or
 * fits as a short form ("Mel" → Melanie); null when none or several fit ("Sam": Sam Hollis and Samira).
 */
export const personForShortForm = (
  short: string,
  persons: ReadonlyArray<{ readonly id: string; readonly key: string }>
): string | null => {
  const ids = new Set(persons.flatMap((person) => {
    const first = person.key.split(" ")[0]!
    return standsFor(short, first) ? [person.id] : []
  }))
  return ids.size === 1 ? [...ids][0]! : null
}
