import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fixtureModelDir } from "./datasets.ts"

export interface EmbeddingServer {
  readonly url: string
  readonly requests: Array<{
    readonly authorization: string | undefined
    readonly model: string
    readonly inputs: number
    /** The token count reported as usage.prompt_tokens (0 for a failed request). */
    readonly tokens: number
  }>
  /** The next this-many embedding requests answer 503, as an overloaded provider does. */
  failures: { remaining: number }
}

/**
 * A stand-in for a remote embeddings provider that speaks the OpenAI /v1/embeddings protocol and computes real
 * embeddings with the local ONNX runtime (the fixture model).
 */
export const embeddingServer = Effect.acquireRelease(
  Effect.promise(async () => {
    const { env, pipeline } = await import("@huggingface/transformers")
    env.allowRemoteModels = false
    env.localModelPath = Path.dirname(fixtureModelDir) + "/"
    const extractor = await pipeline("feature-extraction", Path.basename(fixtureModelDir), { dtype: "fp32" })
    const requests: EmbeddingServer["requests"] = []
    const failures = { remaining: 0 }
    const server = createServer((req, res) => {
      let body = ""
      req.on("data", (chunk) => (body += chunk))
      req.on("end", async () => {
        if (req.method !== "POST" || req.url !== "/v1/embeddings") {
          res.writeHead(404).end()
          return
        }
        const { model, input } = JSON.parse(body) as { model: string; input: Array<string> }
        if (failures.remaining > 0) {
          requests.push({ authorization: req.headers.authorization, model, inputs: input.length, tokens: 0 })
          failures.remaining--
          res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "busy" } }))
          return
        }
        const tokens = input.reduce((sum, text) => sum + extractor.tokenizer.encode(text).length, 0)
        requests.push({ authorization: req.headers.authorization, model, inputs: input.length, tokens })
        const vectors = (await extractor(input, { pooling: "mean", normalize: true })).tolist() as Array<Array<number>>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          object: "list",
          model,
          data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
          usage: { prompt_tokens: tokens, total_tokens: tokens }
        }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    return { server, url: `http://127.0.0.1:${port}/v1`, requests, failures }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)
