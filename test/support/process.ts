import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Net from "node:net"
import * as Path from "node:path"
import { fixtureModelDir } from "./datasets.ts"

const root = Path.resolve(import.meta.dirname, "../..")

export interface Engram {
  readonly child: ChildProcess
  readonly output: () => string
  /** Resolves with the exit code once the process ends. */
  readonly exited: Promise<number | null>
}

/** A real process with only the given environment and its output collected; stopped with SIGTERM at scope end. */
export const spawnProcess = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync((): Engram => {
      const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      child.stdout!.on("data", (chunk) => (output += chunk))
      child.stderr!.on("data", (chunk) => (output += chunk))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, output: () => output, exited }
    }),
    (engram) =>
      Effect.promise(async () => {
        if (engram.child.exitCode === null) engram.child.kill("SIGTERM")
        await engram.exited
      })
  )

/** Starts `node src/main.ts` (what `npm start` runs) as a real process with only the given ENGRAM_* environment. */
export const spawnEngram = (env: Record<string, string>) =>
  spawnProcess(process.execPath, ["src/main.ts"], root, {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    // The fixture model keeps the process offline: without a model directory it would try the hub.
    ENGRAM_EMBED_MODEL_DIR: fixtureModelDir,
    ...env
  })

/** Waits for the process to exit, at most `ms` (generous: start-up on a loaded machine can take a minute). */
export const exitCode = (engram: Engram, ms = 120_000) =>
  Effect.promise(() =>
    Promise.race([engram.exited, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), ms))])
  )

/** Waits for the "engram listening" log line and returns the base URL. */
export const listeningUrl = (engram: Engram, ms = 120_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const match = engram.output().match(/"address":"(http:\/\/[^"]+)"/)
      if (match) return match[1]!.replace("0.0.0.0", "127.0.0.1")
      if (engram.child.exitCode !== null) throw new Error(`engram exited: ${engram.output()}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`engram did not start: ${engram.output()}`)
  })

/**
 * A TCP port that was free a moment ago: bound on 127.0.0.1 by the system (port 0), then released, for a test
 * that must know the port before the process opens it. Never a fixed port.
 */
export const freePort = Effect.promise(() =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
)

/** Holds a port on 127.0.0.1 (chosen by the system) for the scope, so a process started on it finds it taken. */
export const occupiedPort = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<Net.Server>((resolve, reject) => {
      const server = Net.createServer((socket) => socket.destroy())
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve(server))
    })
  ),
  (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map((server) => (server.address() as Net.AddressInfo).port))
