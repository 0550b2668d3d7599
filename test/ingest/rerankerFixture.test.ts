import { AutoModelForSequenceClassification, AutoTokenizer, env } from "@huggingface/transformers"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { buildRerankerFixture } from "../../scripts/lib/reranker-fixture.ts"
import { fixtureModelDir } from "../support/datasets.ts"

const query = "how do vector databases index embeddings"
const passages = [
  "HNSW graphs give approximate nearest neighbour search over embeddings.",
  "The recipe calls for two cups of flour and an egg.",
  "Postgres pgvector supports ivfflat and hnsw indexes, which trade recall for speed."
]

const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-reranker-fixture-"))

/** Builds the fixture as `root/<name>` and scores `query` against `texts` with transformers.js. */
const score = async (name: string, texts: ReadonlyArray<string>, dtype: "fp32" | "q8" = "fp32") => {
  env.allowRemoteModels = false
  env.localModelPath = root + "/"
  const tokenizer = await AutoTokenizer.from_pretrained(name)
  const model = await AutoModelForSequenceClassification.from_pretrained(name, { dtype })
  const inputs = tokenizer(texts.map(() => query), { text_pair: [...texts], padding: true, truncation: true })
  const { logits } = await model(inputs)
  await model.dispose()
  return { dims: logits.dims as Array<number>, values: Array.from(logits.data as Float32Array) }
}

describe("reranker fixture", () => {
  afterAll(() => Fs.rmSync(root, { recursive: true, force: true }))

  it("builds the same bytes every time", () => {
    buildRerankerFixture(fixtureModelDir, Path.join(root, "a"))
    buildRerankerFixture(fixtureModelDir, Path.join(root, "b"))
    buildRerankerFixture(fixtureModelDir, Path.join(root, "b")) // idempotent over an existing directory
    for (const file of ["config.json", "tokenizer.json", "onnx/model.onnx", "onnx/model_quantized.onnx"]) {
      expect(Fs.readFileSync(Path.join(root, "b", file)).equals(Fs.readFileSync(Path.join(root, "a", file)))).toBe(true)
    }
    const config = JSON.parse(Fs.readFileSync(Path.join(root, "a", "config.json"), "utf8"))
    expect(config.architectures).toEqual(["BertForSequenceClassification"])
    expect(config.id2label).toEqual({ "0": "LABEL_0" })
  })

  it("loads as a cross-encoder and gives one finite, deterministic logit per pair", async () => {
    const first = await score("a", passages)
    const second = await score("b", passages)
    expect(first.dims).toEqual([passages.length, 1])
    expect(first.values.every(Number.isFinite)).toBe(true)
    expect(second.values).toEqual(first.values)
    const spread = Math.max(...first.values) - Math.min(...first.values)
    expect(spread).toBeGreaterThan(0.1)
  })

  it("scores a pair the same alone as in a padded batch", async () => {
    const batch = await score("a", passages)
    const alone = await score("a", [passages[1]!])
    expect(alone.dims).toEqual([1, 1])
    expect(alone.values[0]).toBeCloseTo(batch.values[1]!, 4)
  })

  it("loads the q8 variant too", async () => {
    const fp32 = await score("a", passages)
    const q8 = await score("a", passages, "q8")
    expect(q8.dims).toEqual([passages.length, 1])
    q8.values.forEach((v, i) => expect(v).toBeCloseTo(fp32.values[i]!, 1))
  })
})
