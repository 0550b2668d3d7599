/**
 * Stall probe: how long the service leaves requests unanswered while it ingests one large upload.
 *   npm run reliability:stall -- [--mb 1] [--format markdown|text|html] [--interval 20] [--cpu-prof]
 * The service runs as its own process (`node src/main.ts`, DATABASE_URL for PostgreSQL, the tiny fixture model);
 * this process sends GET /api/v1/system/health every `interval` ms (one at a time) from upload until the
 * document is ready, and prints the max and p99 latency. --cpu-prof writes the service's CPU profile to
 * the scratch directory (printed) for a look at what blocked the event loop.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { argument } from "./lib/instance.ts"
import { syntheticDocument } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const megabytes = Number(argument("mb") ?? 1)
const format = (argument("format") ?? "markdown") as "markdown" | "text" | "html"
const interval = Number(argument("interval") ?? 20)
const cpuProfile = argument("cpu-prof") !== undefined
const modelDir = Path.resolve(argument("model-dir") ?? Path.join(root, "../shared/models/_fixtures/tiny-random-bert"))
const scratchDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-stall-"))

/** About `megabytes` MB of prose with headings, in the requested format. */
const document = () => {
  const sections: Array<string> = []
  let size = 0
  for (let i = 0; size < megabytes * 1024 * 1024; i++) {
    const markdown = syntheticDocument(i, 20)
    sections.push(markdown)
    size += markdown.length + 2
  }
  const markdown = sections.join("\n\n")
  if (format === "markdown") return { name: "large.md", text: markdown }
  if (format === "text") return { name: "large.txt", text: markdown.replace(/^## /gm, "") }
  const body = markdown.split("\n\n").map((block) =>
    block.startsWith("## ") ? `<h2>${block.slice(3)}</h2>` : `<p>${block}</p>`
  ).join("\n")
  return { name: "large.html", text: `<!doctype html><html><head><title>Large</title></head><body><article>${body}</article></body></html>` }
}

const startService = () =>
  new Promise<{ url: string; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, [...(cpuProfile ? ["--cpu-prof", `--cpu-prof-dir=${scratchDir}`] : []), "src/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        ENGRAM_DATA_DIR: Path.join(scratchDir, "data"),
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_EMBED_MODEL_DIR: modelDir,
        ENGRAM_LOG_LEVEL: "info",
        ENGRAM_MAX_UPLOAD_BYTES: String(Math.max(50 * 1024 * 1024, Math.ceil(megabytes * 2 * 1024 * 1024)))
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let output = ""
    child.stdout!.on("data", (chunk) => {
      output += chunk
      const match = output.match(/"address":"(http:\/\/[^"]+)"/)
      if (match) {
        resolve({
          url: match[1]!,
          stop: () => new Promise((done) => {
            child.on("exit", () => done())
            child.kill("SIGTERM")
          })
        })
      }
    })
    child.on("exit", (code) => reject(new Error(`the service exited (${code})`)))
  })

const call = async (url: string, path: string, init: { token?: string; json?: unknown } = {}) => {
  const response = await fetch(url + path, {
    method: init.json === undefined ? "GET" : "POST",
    headers: {
      ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
      ...(init.json === undefined ? {} : { "content-type": "application/json" })
    },
    body: init.json === undefined ? undefined : JSON.stringify(init.json)
  })
  const text = await response.text()
  if (response.status >= 400) throw new Error(`${path}: ${response.status} ${text}`)
  return JSON.parse(text)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? 0

const main = async () => {
  const { name, text } = document()
  const service = await startService()
  try {
    const { access_token: token } = await call(service.url, "/api/v1/auth/login", { json: { name: "stall" } })
    while ((await call(service.url, "/api/v1/system/ready")).status !== "ready") await sleep(200)
    const source = await call(service.url, "/api/v1/sources", {
      token,
      json: { name: "stall", connector_kind: "file_upload", config: {} }
    })
    const latencies: Array<number> = []
    let finished = false
    const probe = (async () => {
      while (!finished) {
        const started = performance.now()
        await fetch(`${service.url}/api/v1/system/health`).then((response) => response.text())
        latencies.push(performance.now() - started)
        await sleep(interval)
      }
    })()
    const form = new FormData()
    form.append("files", new Blob([text]), name)
    const started = performance.now()
    const response = await fetch(`${service.url}/api/v1/sources/${source.id}/documents/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form
    })
    const accepted = await response.json() as any
    if (response.status !== 202) throw new Error(`upload: ${response.status} ${JSON.stringify(accepted)}`)
    const documentId = accepted.documents?.[0]?.id ?? accepted.items?.[0]?.id ?? accepted[0]?.id
    let document: any
    for (;;) {
      document = await call(service.url, `/api/v1/sources/${source.id}/documents/${documentId}`, { token })
      if (document.status === "ready" || document.status === "failed") break
      await sleep(250)
    }
    finished = true
    await probe
    const seconds = (performance.now() - started) / 1000
    const sorted = [...latencies].sort((a, b) => a - b)
    console.log(JSON.stringify({
      engine: process.env.DATABASE_URL === undefined ? "pglite" : "postgres",
      format,
      bytes: Buffer.byteLength(text),
      status: document.status,
      seconds: Number(seconds.toFixed(1)),
      probes: latencies.length,
      max_ms: Math.round(sorted.at(-1) ?? 0),
      p99_ms: Math.round(percentile(sorted, 0.99)),
      p50_ms: Math.round(percentile(sorted, 0.5)),
      over_100_ms: latencies.filter((ms) => ms > 100).length,
      over_1000_ms: latencies.filter((ms) => ms > 1000).length
    }))
  } finally {
    await service.stop()
    if (cpuProfile) console.log(`CPU profile in ${scratchDir}`)
    else Fs.rmSync(scratchDir, { recursive: true, force: true })
  }
}

await main()
