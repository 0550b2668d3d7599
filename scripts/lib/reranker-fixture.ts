/**
 * A tiny cross-encoder (sequence-classification) test fixture, built from the random-weight BERT encoder in
 * `shared/models/_fixtures/tiny-random-bert`.
 *
 * The encoder's ONNX graph outputs `last_hidden_state` [batch, seq, 32]. This appends a classification head to
 * it — mean pooling over the tokens that `attention_mask` keeps → MatMul by W [32, 1] → Add b [1] — whose result is
 * a new graph output `logits` [batch_size, 1], which is what transformers.js's `BertForSequenceClassification`
 * reads. The original `last_hidden_state` output stays. (A real BERT cross-encoder classifies the [CLS] state; in
 * this untrained encoder that state hardly depends on the text, so the fixture pools instead. Masked pooling keeps a
 * pair's score independent of the padding its batch adds.)
 *
 * The head is appended without decoding the model: protobuf merges repeated occurrences of a singular
 * embedded-message field, so a second `ModelProto.graph` (field 7) holding only the new nodes, initializers and
 * output is concatenated to the original bytes.
 *
 * The weights (the encoder's, and the head's from a fixed seeded PRNG) are RANDOM: the scores mean nothing about
 * relevance. The fixture only exercises the reranking path — tokenizing (query, passage) pairs, loading with
 * `AutoModelForSequenceClassification`, running, and reading one logit per pair — deterministically.
 *
 * It writes `targetDir/config.json`, the tokenizer files, `onnx/model.onnx` (fp32) and, when the source has one,
 * `onnx/model_quantized.onnx` (the source's int8 encoder with the same fp32 head, for `dtype: 'q8'`).
 * Running it again overwrites them with identical bytes.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

const tokenizerFiles = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"] as const
const hiddenSize = 32
/**
 * The head's PRNG seed and weight scale. With this encoder, logits over varied English (query, passage) pairs come
 * out centred near 0 with a standard deviation of about 1.5, so sigmoid scores spread over (0, 1) instead of
 * saturating: the seed was picked among 0..199 for the smallest |mean| / sd on a sample of pairs.
 */
const seed = 165
const weightScale = 4

// --- a minimal protobuf encoder (https://protobuf.dev/programming-guides/encoding/) ---

type Bytes = Uint8Array

const concat = (parts: ReadonlyArray<Bytes>): Bytes => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

const varint = (value: number | bigint): Bytes => {
  let v = BigInt.asUintN(64, BigInt(value))
  const out: Array<number> = []
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80)
    v >>= 7n
  }
  out.push(Number(v))
  return Uint8Array.from(out)
}

const key = (field: number, wireType: 0 | 2) => varint((field << 3) | wireType)
const int = (field: number, value: number | bigint) => concat([key(field, 0), varint(value)])
const bytes = (field: number, payload: Bytes) => concat([key(field, 2), varint(payload.length), payload])
const message = (field: number, ...parts: ReadonlyArray<Bytes>) => bytes(field, concat(parts))
const string = (field: number, text: string) => bytes(field, new TextEncoder().encode(text))

// --- ONNX messages (field numbers from onnx/onnx.proto) ---

const ElemType = { FLOAT: 1, INT64: 7 } as const
const AttributeType = { INT: 2 } as const

/** TensorProto: dims = 1 (repeated int64), data_type = 2, name = 8, raw_data = 9 (little-endian). */
const tensor = (name: string, dataType: number, dims: ReadonlyArray<number>, raw: Bytes) =>
  concat([...dims.map((d) => int(1, d)), int(2, dataType), string(8, name), bytes(9, raw)])

const floatTensor = (name: string, dims: ReadonlyArray<number>, values: ReadonlyArray<number>) => {
  const raw = new Uint8Array(values.length * 4)
  const view = new DataView(raw.buffer)
  values.forEach((v, i) => view.setFloat32(i * 4, v, true))
  return tensor(name, ElemType.FLOAT, dims, raw)
}

const int64Vector = (name: string, values: ReadonlyArray<bigint>) => {
  const raw = new Uint8Array(values.length * 8)
  const view = new DataView(raw.buffer)
  values.forEach((v, i) => view.setBigInt64(i * 8, v, true))
  return tensor(name, ElemType.INT64, [values.length], raw)
}

/** AttributeProto: name = 1, i = 3, type = 20. */
const intAttribute = (name: string, value: number) => concat([string(1, name), int(3, value), int(20, AttributeType.INT)])

/** NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5. */
const node = (
  opType: string,
  name: string,
  inputs: ReadonlyArray<string>,
  outputs: ReadonlyArray<string>,
  attributes: ReadonlyArray<Bytes> = []
) =>
  concat([
    ...inputs.map((i) => string(1, i)),
    ...outputs.map((o) => string(2, o)),
    string(3, name),
    string(4, opType),
    ...attributes.map((a) => bytes(5, a))
  ])

/**
 * ValueInfoProto (name = 1, type = 2) of a tensor: TypeProto.tensor_type = 1 → elem_type = 1, shape = 2;
 * TensorShapeProto.dim = 1 → dim_value = 1 | dim_param = 2.
 */
const tensorValueInfo = (name: string, elemType: number, dims: ReadonlyArray<number | string>) =>
  concat([
    string(1, name),
    message(
      2,
      message(
        1,
        int(1, elemType),
        message(2, ...dims.map((d) => message(1, typeof d === "number" ? int(1, d) : string(2, d))))
      )
    )
  ])

// --- deterministic weights ---

/** mulberry32: a small seeded PRNG with uniform output in [0, 1). */
const mulberry32 = (state: number) => () => {
  state = (state + 0x6d2b79f5) | 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Standard normal samples by Box–Muller. */
const gaussians = (count: number, random: () => number) =>
  Array.from({ length: count }, () => {
    const u = 1 - random()
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random())
  })

/**
 * The appended GraphProto fragment: the classification head on `last_hidden_state`, masked mean pooling over the
 * tokens (padding-invariant) → MatMul W [32, 1] → Add b [1] → `logits` [batch_size, 1].
 */
const classificationHead = () => {
  const random = mulberry32(seed)
  const weight = gaussians(hiddenSize, random).map((g) => (g * weightScale) / Math.sqrt(hiddenSize))
  const [bias] = gaussians(1, random).map((g) => g * 0.1)
  const n = (step: string) => `/classifier/${step}`
  const out = (step: string) => `/classifier/${step}_output_0`
  const nodes = [
    node("Cast", n("Cast"), ["attention_mask"], [out("Cast")], [intAttribute("to", ElemType.FLOAT)]),
    node("Unsqueeze", n("Unsqueeze"), [out("Cast"), "classifier.axes_2"], [out("Unsqueeze")]),
    node("Mul", n("Mul"), ["last_hidden_state", out("Unsqueeze")], [out("Mul")]),
    node("ReduceSum", n("ReduceSum"), [out("Mul"), "classifier.axes_1"], [out("ReduceSum")], [
      intAttribute("keepdims", 0)
    ]),
    node("ReduceSum", n("ReduceSum_1"), [out("Unsqueeze"), "classifier.axes_1"], [out("ReduceSum_1")], [
      intAttribute("keepdims", 0)
    ]),
    node("Div", n("Div"), [out("ReduceSum"), out("ReduceSum_1")], [out("Div")]),
    node("MatMul", n("MatMul"), [out("Div"), "classifier.weight"], [out("MatMul")]),
    node("Add", n("Add"), [out("MatMul"), "classifier.bias"], ["logits"])
  ]
  return concat([
    ...nodes.map((nd) => bytes(1, nd)), // GraphProto.node = 1
    bytes(5, int64Vector("classifier.axes_1", [1n])), // GraphProto.initializer = 5
    bytes(5, int64Vector("classifier.axes_2", [2n])),
    bytes(5, floatTensor("classifier.weight", [hiddenSize, 1], weight)),
    bytes(5, floatTensor("classifier.bias", [1], [bias!])),
    bytes(12, tensorValueInfo("logits", ElemType.FLOAT, ["batch_size", 1])) // GraphProto.output = 12
  ])
}

/** The encoder's model bytes followed by a second ModelProto.graph (field 7), which parsers merge into the first. */
const withHead = (model: Bytes) => concat([model, bytes(7, classificationHead())])

const writeFile = (path: string, data: Bytes | string) => {
  Fs.mkdirSync(Path.dirname(path), { recursive: true })
  Fs.rmSync(path, { force: true })
  Fs.writeFileSync(path, data)
}

/**
 * Builds the cross-encoder fixture in `targetDir` from the tiny-random-bert encoder in `sourceDir` (see the module
 * comment). Load it with `AutoModelForSequenceClassification.from_pretrained(name, { dtype: "fp32" })` and
 * `env.localModelPath` set to `targetDir`'s parent.
 */
export const buildRerankerFixture = (sourceDir: string, targetDir: string): void => {
  const config = JSON.parse(Fs.readFileSync(Path.join(sourceDir, "config.json"), "utf8"))
  const rerankerConfig = {
    ...config,
    _name_or_path: "tiny-random-bert cross-encoder (RANDOM WEIGHTS, test fixture)",
    architectures: ["BertForSequenceClassification"],
    id2label: { "0": "LABEL_0" },
    label2id: { LABEL_0: 0 }
  }
  writeFile(Path.join(targetDir, "config.json"), JSON.stringify(rerankerConfig, null, 2) + "\n")
  for (const file of tokenizerFiles) {
    writeFile(Path.join(targetDir, file), Fs.readFileSync(Path.join(sourceDir, file)))
  }
  for (const file of ["model.onnx", "model_quantized.onnx"]) {
    const source = Path.join(sourceDir, "onnx", file)
    if (file === "model.onnx" || Fs.existsSync(source)) {
      writeFile(Path.join(targetDir, "onnx", file), withHead(Fs.readFileSync(source)))
    }
  }
}
