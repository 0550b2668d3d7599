import type { ChildProcess } from "node:child_process"
import * as Net from "node:net"

/** A TCP port on 127.0.0.1 that nothing listens on now, for a service a benchmark starts as its own process. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/**
 * Resolves once the service the benchmark started as `child` answers GET /api/v1/system/ready on `port` with 200
 * (asked every 25 ms); fails, naming `what`, if the process exits first.
 */
export const untilReady = async (child: ChildProcess, port: number, what: string) => {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`)
    const ready = await fetch(`http://127.0.0.1:${port}/api/v1/system/ready`).then((r) => r.status === 200, () => false)
    if (ready) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
