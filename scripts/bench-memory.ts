/**
 * `npm run bench:memory [-- --runs N] [--idle SECONDS] [--env NAME=VALUE ...]`: the resident memory of the real
 * service, run as `npm start` runs it (package.json's start script: node, its flags and src/main.ts) as a child
 * process with the default settings on a fresh data directory (the test
 * fixture embedding model, so nothing is downloaded). For each run: time from spawn to ready (GET
 * /api/v1/system/ready answers 200), then, after `--idle` seconds (default 5) without requests, the process's
 * VmRSS (resident now, every thread included: it is one process) and VmHWM (the peak resident so far) from
 * /proc/<pid>/status, with RssAnon/RssFile. Each run starts twice on the same data directory: the first start
 * creates the database, the second reopens it. `--env` adds or overrides a variable of the child (repeatable).
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { parseArgs } from "node:util"
import { freePort, untilReady } from "./lib/childService.ts"
import { startCommand } from "./lib/startCommand.ts"

const root = Path.resolve(import.meta.dirname, "..")
const sharedDir = process.env.ENGRAM_SHARED_DIR ?? Path.resolve(root, "../shared")
const fixtureModel = Path.join(sharedDir, "models/_fixtures/tiny-random-bert")
const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    idle: { type: "string", default: "5" },
    env: { type: "string", multiple: true, default: [] }
  }
})
const runs = Number(values.runs)
/** `npm start`'s variables and its command line after `node`. */
const { env: startEnv, args: startArgs } = startCommand(root)
const idleSeconds = Number(values.idle)
const extraEnv = Object.fromEntries(values.env.map((pair) => {
  const at = pair.indexOf("=")
  if (at < 1) throw new Error(`--env takes NAME=VALUE, got ${pair}`)
  return [pair.slice(0, at), pair.slice(at + 1)]
}))

/** The memory lines of /proc/<pid>/status, in MB (10^6 bytes). */
const memoryOf = (pid: number) => {
  const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)
    if (match === null) throw new Error(`/proc/${pid}/status has no ${name}`)
    return Number(match[1]) * 1024 / 1e6
  }
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1])
  return { rss: field("VmRSS"), hwm: field("VmHWM"), anon: field("RssAnon"), file: field("RssFile"), threads }
}

type Sample = { readonly ready: number } & ReturnType<typeof memoryOf>

/** Starts the service on `dataDir`, waits for ready and `idleSeconds`, reads its memory, then SIGTERM. */
const sample = async (dataDir: string): Promise<Sample> => {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, startArgs, {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      PATH: process.env.PATH,
      ...startEnv,
      HOME: Path.dirname(dataDir),
      ENGRAM_PORT: String(port),
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_EMBED_MODEL_DIR: fixtureModel,
      ...extraEnv
    }
  })
  const exited = new Promise((resolve) => child.on("exit", resolve))
  try {
    await untilReady(child, port, `node ${startArgs.join(" ")}`)
    const readySeconds = (performance.now() - started) / 1000
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000))
    return { ready: readySeconds, ...memoryOf(child.pid!) }
  } finally {
    child.kill("SIGTERM")
    await exited
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const report = (label: string, samples: ReadonlyArray<Sample>) => {
  const show = (key: keyof Sample, unit: string, digits: number) =>
    `${key} ${median(samples.map((s) => s[key])).toFixed(digits)}${unit} (${samples.map((s) => s[key].toFixed(digits)).join(", ")})`
  console.log(
    `${label}: ${show("ready", " s", 2)}; idle ${show("rss", " MB", 0)}; ${show("hwm", " MB", 0)}; ` +
      `${show("anon", " MB", 0)}; ${show("file", " MB", 0)}; ${show("threads", "", 0)}`
  )
}

const load = () => Os.loadavg().map((l) => l.toFixed(2)).join(" ")
console.log(
  `bench:memory: node ${startArgs.join(" ")}; ${runs} runs, ${idleSeconds} s idle, medians (runs in brackets); ` +
    `env ${JSON.stringify(extraEnv)}; load ${load()}`
)
const first: Array<Sample> = []
const second: Array<Sample> = []
for (let i = 0; i < runs; i++) {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-memory-"))
  try {
    first.push(await sample(Path.join(dir, "data")))
    second.push(await sample(Path.join(dir, "data")))
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}
report("first start (new database)", first)
report("second start (reopened)", second)
console.log(`load ${load()}`)
