import * as Net from "node:net"

/** A TCP port on 127.0.0.1 that nothing listens on now, for a service a benchmark starts as its own process. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })
