/**
 * `npm run bench:binary [-- --runs N]`: the size of dist/engram (build it first with `npm run build:binary`) and
 * its start-up time to ready, copied alone into a fresh directory: the first start (unpacking the runtime files,
 * creating the database) and a second one, against `node src/main.ts` on a fresh data directory for comparison.
 * Ready = GET /api/v1/system/ready answers 200, with the test fixture embedding model (no model download).
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { parseArgs } from "node:util"
import { freePort, untilReady } from "./lib/childService.ts"

const root = Path.resolve(import.meta.dirname, "..")
const binary = Path.join(root, "dist/engram")
const sharedDir = process.env.ENGRAM_SHARED_DIR ?? Path.resolve(root, "../shared")
const fixtureModel = Path.join(sharedDir, "models/_fixtures/tiny-random-bert")
const { values } = parseArgs({ options: { runs: { type: "string", default: "3" } } })
const runs = Number(values.runs)

/** Seconds from spawn until ready answers 200, then SIGTERM and wait for the exit. */
const timeToReady = async (command: string, args: ReadonlyArray<string>, cwd: string, dataDir: string) => {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(command, args, {
    cwd,
    stdio: "ignore",
    env: { PATH: "/usr/bin:/bin", HOME: cwd, ENGRAM_PORT: String(port), ENGRAM_DATA_DIR: dataDir, ENGRAM_EMBED_MODEL_DIR: fixtureModel }
  })
  const exited = new Promise((resolve) => child.on("exit", resolve))
  await untilReady(child, port, command)
  const seconds = (performance.now() - started) / 1000
  child.kill("SIGTERM")
  await exited
  return seconds
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const measure = async (label: string, start: (dir: string) => (dataDir: string) => Promise<number>) => {
  const first: Array<number> = []
  const second: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-binary-"))
    const run = start(dir)
    first.push(await run(Path.join(dir, "data")))
    second.push(await run(Path.join(dir, "data")))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
  const show = (xs: ReadonlyArray<number>) => `median ${median(xs).toFixed(2)} s (${xs.map((x) => x.toFixed(2)).join(", ")})`
  console.log(`${label}: first start ${show(first)}; second start ${show(second)}`)
}

console.log(`dist/engram: ${(Fs.statSync(binary).size / 2 ** 20).toFixed(1)} MiB; ${runs} runs; load ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
await measure("dist/engram", (dir) => {
  Fs.copyFileSync(binary, Path.join(dir, "engram"))
  Fs.chmodSync(Path.join(dir, "engram"), 0o755)
  return (dataDir) => timeToReady(Path.join(dir, "engram"), [], dir, dataDir)
})
await measure("node src/main.ts", () => (dataDir) => timeToReady(process.execPath, ["src/main.ts"], root, dataDir))
console.log(`load ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
