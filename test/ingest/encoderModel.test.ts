import { env, pipeline } from "@huggingface/transformers"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { buildEncoderModel } from "../../scripts/lib/encoder-model.ts"
import { sharedDir } from "../support/datasets.ts"

const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-encoder-model-"))
const tokenizerDir = Path.join(sharedDir, "models/_tokenizers/bge-small-en-v1.5")

/** The bge-small tokenizer with a smaller shape than the real model, so the test builds and runs quickly. */
const smallArchitecture = () => {
  const dir = Path.join(root, "architecture")
  Fs.mkdirSync(dir, { recursive: true })
  const config = JSON.parse(Fs.readFileSync(Path.join(tokenizerDir, "config.json"), "utf8"))
  Fs.writeFileSync(
    Path.join(dir, "config.json"),
    JSON.stringify({ ...config, hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 128 })
  )
  for (const file of ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]) {
    Fs.copyFileSync(Path.join(tokenizerDir, file), Path.join(dir, file))
  }
  return dir
}

describe("random-weight encoder of a real model's shape (benchmarks)", () => {
  afterAll(() => Fs.rmSync(root, { recursive: true, force: true }))

  it("builds the same bytes for a seed, and embeds like a BERT sentence encoder", async () => {
    const architecture = smallArchitecture()
    buildEncoderModel(architecture, Path.join(root, "models", "a"))
    buildEncoderModel(architecture, Path.join(root, "models", "b"))
    const bytes = (name: string) => Fs.readFileSync(Path.join(root, "models", name, "onnx", "model.onnx"))
    expect(bytes("b").equals(bytes("a"))).toBe(true)

    env.allowRemoteModels = false
    env.localModelPath = Path.join(root, "models") + "/"
    const extractor = await pipeline("feature-extraction", "a", { dtype: "fp32" })
    const short = "Engram indexes events."
    const long = "A much longer passage, with many more words than the first one, so that the batch pads the short one."
    const alone = await extractor([short], { pooling: "mean", normalize: true })
    const batched = await extractor([short, long], { pooling: "mean", normalize: true })
    expect(batched.dims).toEqual([2, 64])
    const values = Array.from(batched.data as Float32Array)
    expect(values.every(Number.isFinite)).toBe(true)
    // The attention mask keeps padding out: a passage's vector does not depend on what it is batched with.
    const first = values.slice(0, 64)
    Array.from(alone.data as Float32Array).forEach((value, i) => expect(first[i]).toBeCloseTo(value, 4))
    // Different texts give different vectors.
    expect(values.slice(64).some((value, i) => Math.abs(value - first[i]!) > 1e-3)).toBe(true)
    await extractor.dispose()
  })
})
