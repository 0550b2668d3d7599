/**
 * A BERT sentence encoder of a real model's exact shape with RANDOM weights, for benchmarks: the shared fixtures
 * hold real tokenizers and configs (bge-small-en-v1.5, all-MiniLM-L6-v2) but no weights, and the tiny random BERT is
 * far cheaper to run than any real model, so it cannot show what embedding costs next to the rest of the pipeline.
 * This writes, from a directory with `config.json` and the tokenizer files, the same directory layout with
 * `onnx/model.onnx`: embeddings (word + position + token type, LayerNorm), `num_hidden_layers` post-norm
 * transformer layers (12-head attention with the padding mask, GELU feed-forward) and `last_hidden_state` as
 * output — the computation of the real model, so its speed is the real model's. Its vectors mean nothing.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  ElemType,
  floatAttribute,
  floatTensor,
  gaussians,
  int64Scalar,
  int64Vector,
  intAttribute,
  intsAttribute,
  model,
  mulberry32,
  node,
  tensorValueInfo
} from "./onnx.ts"

interface BertConfig {
  readonly vocab_size: number
  readonly hidden_size: number
  readonly num_hidden_layers: number
  readonly num_attention_heads: number
  readonly intermediate_size: number
  readonly max_position_embeddings: number
  readonly type_vocab_size: number
  readonly layer_norm_eps?: number
}

const tokenizerFiles = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]

const encoderGraph = (config: BertConfig, seed: number) => {
  const random = mulberry32(seed)
  const hidden = config.hidden_size
  const heads = config.num_attention_heads
  const headSize = hidden / heads
  const epsilon = config.layer_norm_eps ?? 1e-12
  const nodes: Array<Uint8Array> = []
  const initializers: Array<Uint8Array> = []
  let counter = 0
  /** Adds a node and returns its (single) output's name. */
  const op = (type: string, inputs: ReadonlyArray<string>, attributes: ReadonlyArray<Uint8Array> = []) => {
    const output = `${type.toLowerCase()}_${counter++}`
    nodes.push(node(type, output, inputs, [output], attributes))
    return output
  }
  // BERT's initialisation: weights N(0, 0.02), biases 0, LayerNorm scale 1.
  const weight = (name: string, dims: ReadonlyArray<number>) => {
    const values = gaussians(dims.reduce((a, b) => a * b, 1), random).map((g) => g * 0.02)
    initializers.push(floatTensor(name, dims, values))
    return name
  }
  const filled = (name: string, size: number, value: number) => {
    initializers.push(floatTensor(name, [size], new Float32Array(size).fill(value)))
    return name
  }
  const constant = (name: string, value: number) => {
    initializers.push(floatTensor(name, [], [value]))
    return name
  }
  const layerNorm = (input: string, prefix: string) =>
    op("LayerNormalization", [input, filled(`${prefix}.gamma`, hidden, 1), filled(`${prefix}.beta`, hidden, 0)], [
      intAttribute("axis", -1),
      floatAttribute("epsilon", epsilon)
    ])
  const dense = (input: string, prefix: string, from: number, to: number) =>
    op("Add", [op("MatMul", [input, weight(`${prefix}.weight`, [from, to])]), filled(`${prefix}.bias`, to, 0)])

  initializers.push(
    int64Scalar("zero", 0n),
    int64Scalar("one", 1n),
    int64Vector("mask_axes", [1n, 2n]),
    int64Vector("heads_shape", [0n, 0n, BigInt(heads), BigInt(headSize)]),
    int64Vector("hidden_shape", [0n, 0n, BigInt(hidden)])
  )
  const length = op("Gather", [op("Shape", ["input_ids"]), "one"])
  const positions = op("Range", ["zero", length, "one"])
  let x = op("Add", [
    op("Add", [
      op("Gather", [weight("embeddings.word", [config.vocab_size, hidden]), "input_ids"]),
      op("Gather", [weight("embeddings.position", [config.max_position_embeddings, hidden]), positions])
    ]),
    op("Gather", [weight("embeddings.token_type", [config.type_vocab_size, hidden]), "token_type_ids"])
  ])
  x = layerNorm(x, "embeddings.norm")
  // Padding gets -10000 before the softmax: [batch, 1, 1, seq].
  const mask = op("Mul", [
    op("Sub", [constant("one_f", 1), op("Unsqueeze", [op("Cast", ["attention_mask"], [intAttribute("to", ElemType.FLOAT)]), "mask_axes"])]),
    constant("mask_value", -10000)
  ])
  const scale = constant("attention_scale", 1 / Math.sqrt(headSize))
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const p = `layer.${layer}`
    const split = (input: string, perm: ReadonlyArray<number>) =>
      op("Transpose", [op("Reshape", [input, "heads_shape"])], [intsAttribute("perm", perm)])
    const query = split(dense(x, `${p}.query`, hidden, hidden), [0, 2, 1, 3])
    const keyT = split(dense(x, `${p}.key`, hidden, hidden), [0, 2, 3, 1])
    const value = split(dense(x, `${p}.value`, hidden, hidden), [0, 2, 1, 3])
    const scores = op("Add", [op("Mul", [op("MatMul", [query, keyT]), scale]), mask])
    const context = op("Reshape", [
      op("Transpose", [op("MatMul", [op("Softmax", [scores], [intAttribute("axis", -1)]), value])], [
        intsAttribute("perm", [0, 2, 1, 3])
      ]),
      "hidden_shape"
    ])
    x = layerNorm(op("Add", [dense(context, `${p}.output`, hidden, hidden), x]), `${p}.attention_norm`)
    const inner = dense(x, `${p}.intermediate`, hidden, config.intermediate_size)
    // GELU(u) = u · ½ · (1 + erf(u / √2))
    const gelu = op("Mul", [
      op("Mul", [inner, constant(`${p}.half`, 0.5)]),
      op("Add", [constant(`${p}.one`, 1), op("Erf", [op("Div", [inner, constant(`${p}.sqrt2`, Math.SQRT2)])])])
    ])
    x = layerNorm(op("Add", [dense(gelu, `${p}.ffn_output`, config.intermediate_size, hidden), x]), `${p}.output_norm`)
  }
  nodes.push(node("Identity", "last_hidden_state", [x], ["last_hidden_state"]))
  return model({
    name: "random-bert-encoder",
    nodes,
    initializers,
    inputs: ["input_ids", "attention_mask", "token_type_ids"].map((name) =>
      tensorValueInfo(name, ElemType.INT64, ["batch_size", "sequence_length"])
    ),
    outputs: [tensorValueInfo("last_hidden_state", ElemType.FLOAT, ["batch_size", "sequence_length", hidden])]
  }, 17)
}

/**
 * Writes `targetDir` (config, tokenizer files, `onnx/model.onnx`) from the config and tokenizer in `sourceDir`,
 * with random weights from `seed`. Load it as any local model directory, with dtype fp32.
 */
export const buildEncoderModel = (sourceDir: string, targetDir: string, seed = 1): void => {
  const config = JSON.parse(Fs.readFileSync(Path.join(sourceDir, "config.json"), "utf8")) as BertConfig
  Fs.mkdirSync(Path.join(targetDir, "onnx"), { recursive: true })
  Fs.writeFileSync(Path.join(targetDir, "config.json"), JSON.stringify(config, null, 2) + "\n")
  for (const file of tokenizerFiles) {
    const source = Path.join(sourceDir, file)
    if (Fs.existsSync(source)) Fs.copyFileSync(source, Path.join(targetDir, file))
  }
  Fs.writeFileSync(Path.join(targetDir, "onnx", "model.onnx"), encoderGraph(config, seed))
}
