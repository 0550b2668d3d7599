/**
 * ONNX Runtime's session options for every model the service runs (the embedder, the reranker). Its memory
 * pattern plans and keeps buffers for each input shape it has seen, and batches of chunks come in as many shapes
 * as their padded lengths: with it a bge-small-sized encoder held about 2 GB after six batches of 32 chunks,
 * without it 1.1 GB, at the same speed (docs/benchmarks.md "Memory while ingesting"). The arena stays: without it
 * batches ran 40 % slower. Its thread pool's threads sleep when they run out of work instead of spinning: with a
 * query embedded per search, a spinning thread held most of a core under search load, which the service's thread
 * and the database needed (docs/benchmarks.md "ONNX Runtime's threads spinning").
 */
export const onnxSessionOptions = {
  enableMemPattern: false,
  extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } }
} as const
