/**
 * CPU time of the rules extractor alone, on one thread: the first N SciFact abstracts (title and text as one chunk),
 * extracted one after another outside the service. Prints user and system CPU time of the extraction (module
 * loading excluded) and, with --out, writes every extraction as one JSON line (to compare builds byte for byte).
 *   node scripts/time-extraction.ts [--docs 1000] [--dataset ../shared/datasets/scifact] [--out file.jsonl]
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ExtractionInput } from "../src/extract/Extraction.ts"
import { extractRules } from "../src/extract/rules.ts"
import { argument, readJsonl } from "./lib/instance.ts"

const root = Path.resolve(import.meta.dirname, "..")
const dataset = argument("dataset") ?? Path.join(root, "../shared/datasets/scifact")
const docs = Number(argument("docs") ?? "1000")
const out = argument("out")

const corpus = readJsonl(Path.join(dataset, "corpus.jsonl")) as ReadonlyArray<{ readonly title: string; readonly text: string }>
const inputs: Array<ExtractionInput> = corpus.slice(0, docs).map((doc) => {
  const text = `${doc.title}\n\n${doc.text}`
  return { title: doc.title, documentDate: null, chunks: [{ ordinal: 0, text, speaker: null, spokenAt: null }] }
})

const results: Array<string> = []
const before = process.cpuUsage()
const wall = performance.now()
for (const input of inputs) {
  const extraction = extractRules(input)
  if (out !== undefined) results.push(JSON.stringify(extraction))
}
const used = process.cpuUsage(before)
const seconds = (micros: number) => (micros / 1e6).toFixed(2)
console.log(
  `${inputs.length} abstracts: user ${seconds(used.user)} s, sys ${seconds(used.system)} s, ` +
    `cpu ${seconds(used.user + used.system)} s, wall ${((performance.now() - wall) / 1000).toFixed(2)} s`
)
if (out !== undefined) Fs.writeFileSync(out, `${results.join("\n")}\n`)
