/**
 * A minimal writer of ONNX models (protobuf encoding by hand, field numbers from onnx/onnx.proto), for the model
 * fixtures the tests and benchmarks build: no ONNX tooling or model hub is reachable on the machines this is built on.
 */

export type Bytes = Uint8Array

// --- protobuf (https://protobuf.dev/programming-guides/encoding/) ---

export const concat = (parts: ReadonlyArray<Bytes>): Bytes => {
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

const key = (field: number, wireType: 0 | 2 | 5) => varint((field << 3) | wireType)
export const int = (field: number, value: number | bigint) => concat([key(field, 0), varint(value)])
export const bytes = (field: number, payload: Bytes) => concat([key(field, 2), varint(payload.length), payload])
export const message = (field: number, ...parts: ReadonlyArray<Bytes>) => bytes(field, concat(parts))
export const string = (field: number, text: string) => bytes(field, new TextEncoder().encode(text))
const float32 = (field: number, value: number) => {
  const raw = new Uint8Array(4)
  new DataView(raw.buffer).setFloat32(0, value, true)
  return concat([key(field, 5), raw])
}

// --- ONNX messages ---

export const ElemType = { FLOAT: 1, INT64: 7 } as const
const AttributeType = { FLOAT: 1, INT: 2, INTS: 7 } as const

/** TensorProto: dims = 1 (repeated int64), data_type = 2, name = 8, raw_data = 9 (little-endian). */
const tensor = (name: string, dataType: number, dims: ReadonlyArray<number>, raw: Bytes) =>
  concat([...dims.map((d) => int(1, d)), int(2, dataType), string(8, name), bytes(9, raw)])

export const floatTensor = (name: string, dims: ReadonlyArray<number>, values: ArrayLike<number>) => {
  const data = values instanceof Float32Array ? values : Float32Array.from(values)
  return tensor(name, ElemType.FLOAT, dims, new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
}

export const int64Vector = (name: string, values: ReadonlyArray<bigint>) => {
  const raw = new Uint8Array(values.length * 8)
  const view = new DataView(raw.buffer)
  values.forEach((v, i) => view.setBigInt64(i * 8, v, true))
  return tensor(name, ElemType.INT64, [values.length], raw)
}

/** An int64 scalar (no dims). */
export const int64Scalar = (name: string, value: bigint) => {
  const raw = new Uint8Array(8)
  new DataView(raw.buffer).setBigInt64(0, value, true)
  return tensor(name, ElemType.INT64, [], raw)
}

/** AttributeProto: name = 1, f = 2, i = 3, ints = 8, type = 20. */
export const intAttribute = (name: string, value: number) =>
  concat([string(1, name), int(3, value), int(20, AttributeType.INT)])
export const floatAttribute = (name: string, value: number) =>
  concat([string(1, name), float32(2, value), int(20, AttributeType.FLOAT)])
export const intsAttribute = (name: string, values: ReadonlyArray<number>) =>
  concat([string(1, name), ...values.map((v) => int(8, v)), int(20, AttributeType.INTS)])

/** NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5. */
export const node = (
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
export const tensorValueInfo = (name: string, elemType: number, dims: ReadonlyArray<number | string>) =>
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

/**
 * ModelProto: ir_version = 1, opset_import = 8 (domain = 1, version = 2), graph = 7. GraphProto: node = 1,
 * name = 2, initializer = 5, input = 11, output = 12.
 */
export const model = (graph: {
  readonly name: string
  readonly nodes: ReadonlyArray<Bytes>
  readonly initializers: ReadonlyArray<Bytes>
  readonly inputs: ReadonlyArray<Bytes>
  readonly outputs: ReadonlyArray<Bytes>
}, opset: number) =>
  concat([
    int(1, 8),
    message(8, string(1, ""), int(2, opset)),
    message(
      7,
      ...graph.nodes.map((n) => bytes(1, n)),
      string(2, graph.name),
      ...graph.initializers.map((t) => bytes(5, t)),
      ...graph.inputs.map((i) => bytes(11, i)),
      ...graph.outputs.map((o) => bytes(12, o))
    )
  ])

// --- deterministic weights ---

/** mulberry32: a small seeded PRNG with uniform output in [0, 1). */
export const mulberry32 = (state: number) => () => {
  state = (state + 0x6d2b79f5) | 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Standard normal samples by Box–Muller. */
export const gaussians = (count: number, random: () => number) => {
  const out = new Float64Array(count)
  for (let i = 0; i < count; i++) {
    const u = 1 - random()
    out[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random())
  }
  return out
}
