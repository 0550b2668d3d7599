/**
 * Compares `src/extract/verbs.ts` with compromise's own `verbs()` and `verbs().json()` on every sentence of the given
 * texts: how many sentences get the same verb phrases, how many phrases the same reading (infinitive, negation,
 * form, tense, passive, infinitive after "to"; a phrase with a contraction is left to compromise), the time each
 * took, and each difference written to a file.
 *   node scripts/compare-verbs.ts <corpus.jsonl | texts.json> [N] [--out differences.txt]
 * A .jsonl file is a BEIR corpus (its first N documents, title and text); a .json file is an array of texts.
 */
import * as Fs from "node:fs"
import nlp from "../src/extract/nlp.ts"
import type { TaggedTerm } from "../src/extract/spans.ts"
import { compromiseReading, readVerbPhrase, type VerbReading, verbPhrasesOf } from "../src/extract/verbs.ts"
import { argument, readJsonl } from "./lib/instance.ts"

interface SentenceView {
  readonly docs: ReadonlyArray<ReadonlyArray<TaggedTerm>>
  readonly document: ReadonlyArray<ReadonlyArray<TaggedTerm>>
  readonly fullPointer: ReadonlyArray<ReadonlyArray<number>>
  readonly text: () => string
  readonly verbs: () => { readonly forEach: (each: (verb: { readonly fullPointer: ReadonlyArray<ReadonlyArray<number>> }) => void) => void }
}
const file = process.argv[2]
if (file === undefined) {
  console.error("usage: node scripts/compare-verbs.ts <corpus.jsonl | texts.json> [N] [--out file]")
  process.exit(2)
}
const limit = Number(process.argv[3] !== undefined && !process.argv[3].startsWith("--") ? process.argv[3] : "300")
const out = argument("out") ?? "verb-differences.txt"
const texts: ReadonlyArray<string> = file.endsWith(".jsonl")
  ? (readJsonl(file) as ReadonlyArray<{ readonly title: string; readonly text: string }>).slice(0, limit)
    .map((doc) => `${doc.title}\n\n${doc.text}`)
  : JSON.parse(Fs.readFileSync(file, "utf8")) as ReadonlyArray<string>

const reading = (verb: VerbReading) =>
  JSON.stringify([verb.infinitive, verb.negative, verb.grammar.form, verb.grammar.tense, verb.grammar.passive === true, verb.grammar.isInfinitive])
let sentences = 0
let sameSentences = 0
let phrases = 0
let samePhrases = 0
let contractions = 0
let theirs = 0
let ours = 0
const differences: Array<string> = []
for (const text of texts) {
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    const parsed = nlp(line) as unknown as SentenceView & { readonly sentences: () => { forEach: (each: (one: SentenceView) => void) => void } }
    const documentTerms = parsed.document.reduce((count, terms) => count + terms.length, 0)
    parsed.sentences().forEach((sentence) => {
      const terms = sentence.docs[0]!
      const n = sentence.fullPointer[0]![0]!
      sentences++
      let started = performance.now()
      const before: Array<string> = []
      sentence.verbs().forEach((verb) => before.push(`${verb.fullPointer[0]![1]}-${verb.fullPointer[0]![2]}`))
      theirs += performance.now() - started
      started = performance.now()
      const spans = verbPhrasesOf(terms)
      ours += performance.now() - started
      if (spans.map((span) => span.join("-")).join(",") !== before.join(",")) {
        differences.push(`${sentence.text()}\n   phrases: compromise ${before.join(",")} | ours ${spans.map((span) => span.join("-")).join(",")}`)
        return
      }
      sameSentences++
      for (const span of spans) {
        phrases++
        started = performance.now()
        const old = compromiseReading(sentence.document, n, span)!
        theirs += performance.now() - started
        started = performance.now()
        const mine = readVerbPhrase(terms, span, n, documentTerms)
        ours += performance.now() - started
        if (mine === null) contractions++
        else if (reading(mine) === reading(old)) samePhrases++
        else differences.push(`${sentence.text()}\n   phrase ${span.join("-")}: compromise ${reading(old)} | ours ${reading(mine)}`)
      }
    })
  }
}
console.log(
  `${sentences} sentences, ${sameSentences} with the same phrases; ${phrases} phrases, ${contractions} with a ` +
    `contraction left to compromise, ${samePhrases} read the same, ${phrases - contractions - samePhrases} differ; ` +
    `compromise ${(theirs / 1000).toFixed(2)} s, ours ${(ours / 1000).toFixed(2)} s`
)
Fs.writeFileSync(out, differences.join("\n") + "\n")
if (differences.length > 0) console.log(`differences written to ${out}`)
