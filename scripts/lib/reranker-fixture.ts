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
import {
  bytes,
  concat,
  ElemType,
  floatTensor,
  gaussians,
  int64Vector,
  intAttribute,
  mulberry32,
  node,
  tensorValueInfo,
  type Bytes
} from "./onnx.ts"

const tokenizerFiles = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"] as const
const hiddenSize = 32
/**
 * The head's PRNG seed and weight scale. With this encoder, logits over varied English (query, passage) pairs come
 * out centred near 0 with a standard deviation of about 1.5, so sigmoid scores spread over (0, 1) instead of
 * saturating: the seed was picked among 0..199 for the smallest |mean| / sd on a sample of pairs.
 */
const seed = 165
const weightScale = 4

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
