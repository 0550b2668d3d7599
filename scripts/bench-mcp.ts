/**
 * What the MCP endpoint adds to a search: the same queries through `tools/call search` (the official 2.x client,
 * 2026-07-28, one connection) and through POST /api/v1/search, interleaved in one run over one synthetic corpus,
 * p50/p95 of each and the difference. Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 *   npm run bench:mcp -- [--chunks 20000] [--queries 300] [--strategy lexical|multi]
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { argument, call, machine, percentile, pool, startInstance, waitForSource } from "./lib/instance.ts"
import { syntheticDocument, syntheticQuery } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const targetChunks = Number(argument("chunks") ?? 20_000)
const queryCount = Number(argument("queries") ?? 300)
const strategy = argument("strategy") ?? "multi"
const chunksPerDocument = 200

const program = Effect.gen(function*() {
  const instance = yield* startInstance({ embedModel: "none", extractor: "off" })
  const { url } = instance
  const engine = Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite"
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "bench", connector_kind: "file_upload", config: {} } })
  )
  const documents = Math.ceil(targetChunks / chunksPerDocument)
  yield* Effect.promise(() =>
    pool(Array.from({ length: documents }, (_, i) => i), 4, async (i) => {
      await call(url, `/api/v1/sources/${source.id}/documents/ingest`, {
        token,
        json: { title: `doc-${i}`, text: syntheticDocument(i, chunksPerDocument) }
      })
    })
  )
  const corpus = yield* Effect.promise(() => waitForSource(url, token, source.id, documents))
  console.log(`corpus: ${corpus.chunk_count} chunks (${engine})`)

  const client = new Client({ name: "bench", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
  yield* Effect.promise(() =>
    client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/api/v1/mcp/`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
    )
  )
  const viaMcp = async (query: string) => {
    const started = performance.now()
    const result = await client.callTool({ name: "search", arguments: { query, strategy, top_k: 10 } })
    if (result.isError === true) throw new Error(JSON.stringify(result.content))
    return performance.now() - started
  }
  const viaHttp = async (query: string) => {
    const started = performance.now()
    await call(url, "/api/v1/search", { token, json: { query, strategy, top_k: 10 } })
    return performance.now() - started
  }
  const queries = Array.from({ length: queryCount }, (_, i) => syntheticQuery(i))
  // Warm both paths, then alternate which goes first so that neither gains from the other's caches.
  for (const query of queries.slice(0, 20)) {
    yield* Effect.promise(() => viaHttp(query))
    yield* Effect.promise(() => viaMcp(query))
  }
  const mcp: Array<number> = []
  const http: Array<number> = []
  for (const [i, query] of queries.entries()) {
    if (i % 2 === 0) {
      http.push(yield* Effect.promise(() => viaHttp(query)))
      mcp.push(yield* Effect.promise(() => viaMcp(query)))
    } else {
      mcp.push(yield* Effect.promise(() => viaMcp(query)))
      http.push(yield* Effect.promise(() => viaHttp(query)))
    }
  }
  yield* Effect.promise(() => client.close())
  const result = {
    engine,
    strategy,
    chunks: corpus.chunk_count,
    queries: queryCount,
    http_ms: { p50: percentile(http, 50), p95: percentile(http, 95) },
    mcp_ms: { p50: percentile(mcp, 50), p95: percentile(mcp, 95) },
    added_ms: { p50: percentile(mcp, 50) - percentile(http, 50), p95: percentile(mcp, 95) - percentile(http, 95) },
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`POST /search:          p50 ${result.http_ms.p50.toFixed(1)} ms, p95 ${result.http_ms.p95.toFixed(1)} ms`)
  console.log(`tools/call search:     p50 ${result.mcp_ms.p50.toFixed(1)} ms, p95 ${result.mcp_ms.p95.toFixed(1)} ms`)
  console.log(`MCP adds:              p50 ${result.added_ms.p50.toFixed(1)} ms, p95 ${result.added_ms.p95.toFixed(1)} ms`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  Fs.writeFileSync(Path.join(outDir, `mcp-${engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
