/**
 * A verb's subject, read from a sentence's tagged terms: compromise's own heuristic (`verbs().subjects()`, in its
 * `getSubject.js`, `clauses.js` and `nouns/find.js`, version 14), written over the term array instead of through
 * its views. compromise builds a view for every split and match, parses a pattern for each, and for every verb
 * also parses the verb again and checks whether the subject is plural, both thrown away by `subjects()`: two
 * fifths of the rules' time on SciFact abstracts. Here the sentence-wide facts (which commas split clauses) are
 * computed once per sentence, and each verb's clause split and noun search are plain scans of the words before it.
 *
 * The same steps in the same order, its quirks kept where they change a result (a comma on either of the last two
 * words splits nothing; `splitBefore` joins a piece ending in a match to the next piece's words before its own
 * match). Its `shouldSkip` is left out: it looks at the number of matches in a one-match view, so it never skips.
 */
import {
  has,
  isOneOf,
  isWord,
  type Matcher,
  pair,
  scan,
  single,
  type Span,
  splitAfter,
  splitBefore,
  splitOn,
  type TaggedTerm,
  type Terms,
  wordCount,
  words
} from "./spans.ts"

// --- clauses (chunker/api/clauses.js) ---

const hasComma = (term: TaggedTerm | undefined) => term !== undefined && term.post.includes(",")
const dash = / [-–—]{1,3} /
const endsClause = (term: TaggedTerm) =>
  term.post.includes("..") || term.post.includes("…") || term.post.includes(";") || term.post.includes(":") ||
  dash.test(term.post) || dash.test(term.pre)

const andOr = words("and", "or")

/** Which commas split a clause: none at the sentence's edges, in a list ("fun, cool"), a place, a date or adjectives. */
const clauseCommas = (terms: Terms): ReadonlyArray<boolean> =>
  terms.map((term, t) => {
    if (!hasComma(term)) return false
    if (wordCount(terms, t - 1, t + 1) === 1) return false
    // growRight('. .') grows only by two words.
    if ((t + 2 < terms.length ? wordCount(terms, t, t + 3) : 1) === 1) return false
    const from = Math.max(0, t - 1)
    const to = Math.min(terms.length, t + 2)
    for (let k = from; k < to; k++) {
      const a = terms[k]!
      const b = k + 1 < to ? terms[k + 1] : undefined
      if (b === undefined) continue
      if (hasComma(a) && hasComma(b)) return false
      if (hasComma(a) && isOneOf(b, andOr) && k + 2 < to) return false
      if (has(a, "City") && hasComma(a) && has(b, "Country")) return false
      if (has(a, "WeekDay") && hasComma(a) && has(b, "Date")) return false
      if (has(a, "Date") && hasComma(a) && has(b, "Value")) return false
      if (has(a, "Adjective") && hasComma(a) && has(b, "Adjective")) return false
    }
    return true
  })

const hasOpenParenthesis = /\(/
const hasClosedParenthesis = /\)/

/** Parenthesised phrases of three words or more with a verb and a noun. */
const parenthesesIn: Matcher = (terms, piece) => {
  const found: Array<Span> = []
  const size = piece[1] - piece[0]
  for (let i = 0; i < size; i++) {
    const term = terms[piece[0] + i]!
    if (!hasOpenParenthesis.test(term.pre)) continue
    let end: number | null = null
    for (let k = piece[0] + i; k < piece[1]; k++) {
      if (hasClosedParenthesis.test(terms[k]!.post)) {
        end = k
        break
      }
    }
    if (end === null) continue
    found.push([piece[0] + i, end + 1])
    // compromise skips to the closing word's index in the sentence, not in the piece.
    i = end
  }
  return found.filter((span) => phraseWithClause(terms, span))
}

const quotePairs: Record<string, string> = {
  "\u0022": "\u0022", "\uFF02": "\uFF02", "\u0027": "\u0027", "\u201C": "\u201D", "\u2018": "\u2019",
  "\u201F": "\u201D", "\u201B": "\u2019", "\u201E": "\u201D", "\u2E42": "\u201D", "\u201A": "\u2019",
  "\u00AB": "\u00BB", "\u2039": "\u203A", "\u2035": "\u2032", "\u2036": "\u2033", "\u2037": "\u2034",
  "\u301D": "\u301E", "\u0060": "\u00B4", "\u301F": "\u301E"
}
const hasOpenQuote = new RegExp(`[${Object.keys(quotePairs).join("")}]`)

/** Quotations of three words or more with a verb and a noun. */
const quotationsIn: Matcher = (terms, piece) => {
  const found: Array<Span> = []
  const size = piece[1] - piece[0]
  for (let i = 0; i < size; i++) {
    const term = terms[piece[0] + i]!
    const open = hasOpenQuote.exec(term.pre)?.[0]
    if (open === undefined) continue
    const want = quotePairs[open]!
    let end: number | null = null
    for (let k = i; k < size; k++) {
      if (terms[piece[0] + k]!.post.includes(want)) {
        end = k
        break
      }
    }
    if (end === null) continue
    // compromise ends the quotation at the closing word's index in the piece, read as an index in the sentence.
    found.push([piece[0] + i, end + 1])
    i = end
  }
  return found.filter((span) => span[1] > span[0] && phraseWithClause(terms, span))
}

const phraseWithClause = (terms: Terms, span: Span) => {
  let verb = false
  let noun = false
  for (let k = span[0]; k < span[1]; k++) {
    verb ||= has(terms[k], "Verb")
    noun ||= has(terms[k], "Noun")
  }
  return wordCount(terms, span[0], span[1]) >= 3 && verb && noun
}

const saidSays = words("said", "says")
const supposing = words("supposing", "although")
const whileIfThough = words("while", "if", "though")
const whereasWhose = words("whereas", "whose")
const thoughIf = words("though", "if")
const tilUntil = words("til", "until")

const clausesOf = (terms: Terms, commas: ReadonlyArray<boolean>, pieces: ReadonlyArray<Span>): ReadonlyArray<Span> => {
  let found = splitOn(terms, pieces, parenthesesIn)
  found = splitOn(terms, found, quotationsIn)
  found = splitAfter(terms, found, scan((_, i) => (commas[i] === true ? [i, i + 1] : null)))
  found = splitAfter(terms, found, single(endsClause))
  // i said
  found = splitAfter(terms, found, (terms, piece) =>
    piece[1] - piece[0] >= 2 && has(terms[piece[0]], "Pronoun") && isOneOf(terms[piece[0] + 1], saidSays)
      ? [[piece[0], piece[0] + 2]]
      : [])
  // ... said John.
  found = splitBefore(terms, found, (terms, piece) =>
    piece[1] - piece[0] >= 2 && isOneOf(terms[piece[1] - 2], saidSays) && has(terms[piece[1] - 1], "ProperNoun")
      ? [[piece[1] - 2, piece[1]]]
      : [])
  // ... if it was: the split falls two words before "if".
  found = splitBefore(terms, found, scan((terms, i, piece) =>
    i + 6 < piece[1] && isWord(terms[i + 2], "if") ? [i, i + 7] : null))
  found = splitBefore(terms, found, pair((a) => isWord(a, "and"), (b) => isWord(b, "while")))
  found = splitBefore(terms, found, pair((a) => isWord(a, "now"), (b) => isWord(b, "that")))
  found = splitBefore(terms, found, pair((a) => isWord(a, "ever"), (b) => isWord(b, "since")))
  found = splitBefore(terms, found, single((a) => isOneOf(a, supposing)))
  found = splitBefore(terms, found, pair((a) => isWord(a, "even"), (b) => isOneOf(b, whileIfThough)))
  found = splitBefore(terms, found, single((a) => isOneOf(a, whereasWhose)))
  found = splitBefore(terms, found, pair((a) => isWord(a, "as"), (b) => isOneOf(b, thoughIf)))
  found = splitBefore(terms, found, single((a) => isOneOf(a, tilUntil)))
  // it is cool but it is ..: a "but" with a verb before and after it in its piece. compromise's pattern
  // ('#Verb .* [but] .* #Verb') finds no match whose last verb ends the piece ("it rose but it fell").
  found = splitBefore(terms, found, (terms, piece) => {
    const splits: Array<Span> = []
    let from = piece[0]
    while (from < piece[1]) {
      let verb = from
      while (verb < piece[1] && !has(terms[verb], "Verb")) verb++
      let but = verb + 1
      while (but < piece[1] && !isWord(terms[but], "but")) but++
      let after = but + 1
      while (after < piece[1] && !has(terms[after], "Verb")) after++
      if (after >= piece[1] - 1) break
      splits.push([but, but + 1])
      from = after + 1
    }
    return splits
  })
  // if it is this then that
  found = splitBefore(terms, found, (terms, piece) => {
    let condition = false
    for (let i = piece[0]; i < piece[1] && !condition; i++) {
      if (!isWord(terms[i], "if")) continue
      for (let j = i + 3; j <= i + 10 && j + 1 < piece[1]; j++) {
        if (isWord(terms[j], "then")) {
          condition = true
          break
        }
      }
    }
    if (!condition) return []
    const splits: Array<Span> = []
    for (let i = piece[0]; i < piece[1]; i++) if (isWord(terms[i], "then")) splits.push([i, i + 1])
    return splits
  })
  return found
}

// --- noun phrases (nouns/find.js) ---

const lonePronouns = words("he", "she", "we", "you", "they", "i")
const objectPronouns = words("he", "him", "she", "it")
const articles = words("the", "a", "an")
const hereThere = words("here", "there")
const possessives = words("our", "my", "their", "your")

const nounsOf = (terms: Terms, commas: ReadonlyArray<boolean>, pieces: ReadonlyArray<Span>): Array<Span> => {
  const runs: Array<Span> = []
  for (const piece of clausesOf(terms, commas, pieces)) {
    for (let i = piece[0]; i < piece[1]; i++) {
      if (terms[i]!.chunk !== "Noun") continue
      let end = i + 1
      while (end < piece[1] && terms[end]!.chunk === "Noun") end++
      runs.push([i, end])
      i = end - 1
    }
  }
  let m: ReadonlyArray<Span> = runs
  // allow toronto, ontario
  m = splitAfter(terms, m, single((term) => hasComma(term) && !term.tags.has("Place")))
  m = splitOn(terms, m, single((term) => term.tags.has("Expression")))
  m = splitOn(terms, m, single((term) => isOneOf(term, lonePronouns)))
  // a client i saw
  m = splitOn(
    terms,
    m,
    scan((terms, i, piece) =>
      i + 1 < piece[1] && (has(terms[i], "Noun") || has(terms[i], "Adjective")) && isOneOf(terms[i + 1], objectPronouns)
        ? [i, i + 2]
        : null, (match) => [match[0] + 1, match[0] + 2])
  )
  // give him the best
  m = splitOn(
    terms,
    m,
    scan((terms, i, piece) =>
      i + 1 < piece[1] && isOneOf(terms[i], objectPronouns) &&
        (has(terms[i + 1], "Determiner") || has(terms[i + 1], "Value"))
        ? [i, i + 2]
        : null, (match) => [match[0], match[0] + 1])
  )
  // the noise the slide makes
  m = splitBefore(
    terms,
    m,
    scan((terms, i, piece) => {
      if (!(i + 2 < piece[1] && has(terms[i], "Noun") && isOneOf(terms[i + 1], articles))) return null
      if (has(terms[i + 2], "Adjective")) return i + 3 < piece[1] && has(terms[i + 3], "Noun") ? [i, i + 4] : null
      return has(terms[i + 2], "Noun") ? [i, i + 3] : null
    }, (match) => [match[0] + 1, match[0] + 2])
  )
  // here spencer slept
  m = splitOn(
    terms,
    m,
    scan((terms, i, piece) =>
      i + 1 < piece[1] && isOneOf(terms[i], hereThere) && has(terms[i + 1], "Noun") ? [i, i + 2] : null, (match) =>
      [match[0], match[0] + 1])
  )
  // put it there
  m = splitOn(
    terms,
    m,
    scan((terms, i, piece) =>
      i + 1 < piece[1] && has(terms[i], "Noun") && isOneOf(terms[i + 1], hereThere) ? [i, i + 2] : null, (match) =>
      [match[0], match[0] + 1])
  )
  m = splitBefore(terms, m, single((term) => isOneOf(term, possessives)))
  // tell my friend that he
  m = splitOn(
    terms,
    m,
    scan((terms, i, piece) =>
      i + 1 < piece[1] && has(terms[i], "Noun") && has(terms[i + 1], "Determiner") ? [i, i + 2] : null, (match) =>
      [match[0] + 1, match[0] + 2])
  )
  return m.filter((span) => {
    for (let k = span[0]; k < span[1]; k++) if (has(terms[k], "Noun")) return true
    return false
  })
}

// --- the subject (verbs/api/parse/getSubject.js) ---

const subordinateOpeners = words("if", "unless", "while", "but", "for", "per", "at", "by", "that", "which", "who", "from")
const demonstratives = words("that", "this", "those")

/** Drops the clauses before the verb that look subordinate ("if it was raining"), unless that drops them all. */
const mainClauses = (terms: Terms, commas: ReadonlyArray<boolean>, before: Span): Array<Span> => {
  const parts = clausesOf(terms, commas, [before]).filter((part, i) => {
    if (isOneOf(terms[part[0]], subordinateOpeners)) return false
    // bowed to her,
    if (i > 0 && part[1] - part[0] >= 3 && has(terms[part[0]], "Verb")) {
      let nouns = true
      for (let k = part[0] + 2; k < part[1] && nouns; k++) nouns = has(terms[k], "Noun")
      if (nouns) return false
    }
    // the fog, suddenly increasing in..
    if (i > 0 && has(terms[part[0]], "Adverb")) return false
    return true
  })
  return parts.length === 0 ? [before] : parts
}

/**
 * The subjects of a sentence's verbs, by the index of a verb phrase's first term: compromise's last noun phrase
 * before the verb, a pronoun (I, he, she, we, you, they) in it, or the first phrase opening with that/this/those.
 */
export const subjectFinder = (terms: Terms): (verbStart: number) => Span | null => {
  let commas: ReadonlyArray<boolean> | undefined
  return (verbStart) => {
    if (verbStart <= 0) return null
    commas ??= clauseCommas(terms)
    const parts = mainClauses(terms, commas, [0, verbStart])
    const nouns = nounsOf(terms, commas, parts)
    const last = nouns[nouns.length - 1]
    if (last !== undefined) {
      for (let k = last[0]; k < last[1]; k++) {
        if (!isOneOf(terms[k], lonePronouns)) continue
        // compromise returns the pronoun's own noun phrase.
        for (let p = k; p < last[1]; p++) {
          const term = terms[p]!
          if (isOneOf(term, lonePronouns) && term.chunk === "Noun" && term.tags.has("Noun")) return [p, p + 1]
        }
        return null
      }
      const demonstrative = nouns.find((span) => isOneOf(terms[span[0]], demonstratives))
      return demonstrative ?? last
    }
    for (const part of parts) if (isOneOf(terms[part[0]], demonstratives)) return [part[0], part[0] + 1]
    return null
  }
}
