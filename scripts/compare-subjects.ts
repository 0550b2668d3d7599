/**
 * Compares the subject finder of `src/extract/subjects.ts` with compromise's own `verbs().subjects()` on every
 * verb of the given texts: how many verbs get the same subject (same character offsets), the time each took, and
 * each difference (sentence, verb, both subjects) written to a file.
 *   node scripts/compare-subjects.ts <corpus.jsonl | texts.json> [N] [--out differences.txt]
 * A .jsonl file is a BEIR corpus (its first N documents, title and text); a .json file is an array of texts.
 */
import * as Fs from "node:fs"
import nlp from "../src/extract/nlp.ts"
import { spanOffsets, type TaggedTerm } from "../src/extract/spans.ts"
import { subjectFinder } from "../src/extract/subjects.ts"
import { argument, readJsonl } from "./lib/instance.ts"

type Term = TaggedTerm & { readonly offset: { readonly start: number; readonly length: number } }
interface Offset {
  readonly start: number
  readonly length: number
}
interface VerbView {
  readonly fullPointer: ReadonlyArray<ReadonlyArray<number>>
  readonly text: () => string
  readonly subjects: () => { readonly json: (options: unknown) => ReadonlyArray<{ readonly offset: Offset }> }
}
interface SentenceView {
  readonly docs: ReadonlyArray<ReadonlyArray<Term>>
  readonly text: () => string
  readonly verbs: () => { readonly forEach: (each: (verb: VerbView) => void) => void }
}

const file = process.argv[2]
if (file === undefined) {
  console.error("usage: node scripts/compare-subjects.ts <corpus.jsonl | texts.json> [N] [--out file]")
  process.exit(2)
}
const limit = Number(process.argv[3] !== undefined && !process.argv[3].startsWith("--") ? process.argv[3] : "300")
const out = argument("out") ?? "subject-differences.txt"
const texts: ReadonlyArray<string> = file.endsWith(".jsonl")
  ? (readJsonl(file) as ReadonlyArray<{ readonly title: string; readonly text: string }>).slice(0, limit)
    .map((doc) => `${doc.title}\n\n${doc.text}`)
  : JSON.parse(Fs.readFileSync(file, "utf8")) as ReadonlyArray<string>

let verbs = 0
let same = 0
let theirs = 0
let ours = 0
const differences: Array<string> = []
const offsetOnly = { offset: true, text: false, terms: false }
for (const text of texts) {
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    const doc = nlp(line)
    doc.compute("offset")
    doc.sentences().forEach((one) => {
      const sentence = one as unknown as SentenceView
      const terms = sentence.docs[0]!
      const find = subjectFinder(terms)
      sentence.verbs().forEach((verb) => {
        verbs++
        let started = performance.now()
        const old = verb.subjects().json(offsetOnly)[0]?.offset
        theirs += performance.now() - started
        started = performance.now()
        const span = find(verb.fullPointer[0]![1]!)
        ours += performance.now() - started
        const mine = span === null ? undefined : spanOffsets(terms, span)
        const key = (offset: Offset | undefined) => offset === undefined ? "-" : `${offset.start}+${offset.length}`
        if (key(old) === key(mine)) {
          same++
          return
        }
        const show = (offset: Offset | undefined) =>
          offset === undefined ? "(none)" : JSON.stringify(line.slice(offset.start, offset.start + offset.length))
        differences.push(`${sentence.text()}\n   verb ${JSON.stringify(verb.text())}: compromise ${show(old)} | ours ${show(mine)}`)
      })
    })
  }
}
console.log(
  `${verbs} verbs, ${same} same, ${verbs - same} differ; compromise ${(theirs / 1000).toFixed(2)} s, ours ${
    (ours / 1000).toFixed(2)
  } s`
)
Fs.writeFileSync(out, differences.join("\n\n"))
