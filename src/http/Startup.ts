import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Duration, Effect, Exit, Layer, Option, Ref, Scope } from "effect"
import { HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { EngramConfig, isLoopbackHost, unknownSettings } from "../config.ts"
import { StartupError } from "../adapters/Db.ts"

/** The application's request handler once every service is up. */
export type AppHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  unknown,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/** Why binding the port failed, and what the operator can set to fix it. */
const listenFailure = (host: string, port: number, cause: unknown) => {
  const address = `${host}:${port}`
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  switch (code) {
    case "EADDRINUSE":
      return `Cannot listen on ${address}: the address is already in use (another Engram or another program ` +
        "listens there). Stop that program, or set ENGRAM_PORT to a free port (ENGRAM_HOST sets the interface)."
    case "EACCES":
      return `Cannot listen on ${address}: permission denied (ports below 1024 need privileges). ` +
        "Set ENGRAM_PORT to 1024 or higher."
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `Cannot listen on ${address}: ENGRAM_HOST=${host} is not an address of this machine. ` +
        "Set ENGRAM_HOST to 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)."
    default:
      return `Cannot listen on ${address}: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        "Check ENGRAM_HOST and ENGRAM_PORT."
  }
}

/** A misspelt setting is otherwise ignored without a word: name it, and the setting it probably meant. */
const warnAboutUnknownSettings = Effect.flatMap(unknownSettings, (unknown) =>
  Effect.forEach(unknown, ({ name, suggestion }) =>
    Effect.logWarning(
      `${name} is not an Engram setting and is ignored` +
        Option.match(suggestion, { onNone: () => "", onSome: (known) => `: did you mean ${known}?` }) +
        " The settings are listed in the README (Configuration)."
    ), { discard: true }))

/** Name-only login on an address other machines can reach lets anyone sign in as anyone: say so loudly. */
const warnIfLoginExposed = Effect.gen(function*() {
  const config = yield* EngramConfig
  if (!config.localLogin || isLoopbackHost(config.host)) return
  yield* Effect.logWarning(
    `name-only login (ENGRAM_LOCAL_LOGIN=true) is exposed on ${config.host}: anyone who can reach this port can ` +
      "sign in as any user, administrators included, by name alone. Set ENGRAM_LOCAL_LOGIN=false (users then " +
      "sign in with passwords; see ENGRAM_ALLOW_REGISTRATION), or ENGRAM_HOST=127.0.0.1 to serve this machine " +
      "only, unless a proxy in front authenticates every request."
  )
})

/**
 * The HTTP server on ENGRAM_HOST:ENGRAM_PORT; a port that cannot be bound stops start-up with the reason.
 * Warns when name-only login is reachable from other machines.
 */
export const HttpServerLive = Layer.unwrap(Effect.map(EngramConfig, (config) =>
  Layer.merge(
    Layer.effect(
      HttpServer.HttpServer,
      NodeHttpServer.make(createServer, {
        host: config.host,
        port: config.port,
        gracefulShutdownTimeout: Duration.seconds(config.shutdownTimeoutSeconds)
      }).pipe(
        Effect.mapError((error) => new StartupError({ message: listenFailure(config.host, config.port, error.cause) })),
        Effect.tap(() => Effect.andThen(warnAboutUnknownSettings, warnIfLoginExposed))
      )
    ),
    NodeHttpServer.layerHttpServices
  )))

const healthPath = "/api/v1/system/health"
const readyPath = "/api/v1/system/ready"

const validRequestId = (value: string | undefined) =>
  value !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined

/** A JSON reply with the request id, for requests the routes never see. */
const reply = (status: number, body: (requestId: string) => unknown, headers: Record<string, string> = {}) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = validRequestId(request.headers["x-request-id"]) ?? randomUUID()
    return HttpServerResponse.jsonUnsafe(body(requestId), { status, headers }).pipe(
      HttpServerResponse.setHeader("x-request-id", requestId),
      HttpServerResponse.setHeader("x-content-type-options", "nosniff")
    )
  })

/** An error in the API's envelope. */
const errorReply = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  reply(status, (requestId) => ({ error: { code, message, request_id: requestId } }), headers)

const requestPath = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.url.split("?")[0] ?? "")

/** What a request gets while the services start: liveness holds, readiness and everything else are 503. */
const whileStarting = Effect.gen(function*() {
  const path = yield* requestPath
  if (path === healthPath) return yield* reply(200, () => ({ status: "ok" }))
  return yield* path === readyPath
    ? errorReply(
      503,
      "not_ready",
      "Not ready: Engram is starting (opening the database, applying migrations, loading models)",
      { "retry-after": "1" }
    )
    : errorReply(503, "starting", "Engram is starting and does not serve requests yet; retry in a moment", {
      "retry-after": "1"
    })
})

/** The paths a worker process serves (the metrics endpoint joins them when it lands). */
export const workerPaths: ReadonlyArray<string> = [healthPath, readyPath, "/metrics"]

/** A worker process (ENGRAM_ROLE=worker) answers its probes; every other path is 404 saying where the API is. */
export const servingProbesOnly = (app: AppHandler): AppHandler =>
  Effect.flatMap(requestPath, (path) =>
    workerPaths.includes(path) ? app : errorReply(
      404,
      "not_served_here",
      "This Engram process runs ingestion workers only (ENGRAM_ROLE=worker) and serves " +
        `${workerPaths.join(" and ")}; send API requests to a process with ENGRAM_ROLE=api or all`
    ))

/**
 * Answers every connection from the moment the port is open, so no probe or client ever waits on a silent
 * socket: while the services start, health is 200, ready is 503 not_ready and every other route 503 starting;
 * `open` hands all requests to the application. `drain` stops accepting connections and waits for the requests
 * in flight (at most ENGRAM_SHUTDOWN_TIMEOUT_SECONDS, then cut): the application calls it before its
 * services shut down.
 */
export class StartupGate extends Context.Service<StartupGate, {
  readonly open: (app: AppHandler) => Effect.Effect<void>
  readonly drain: Effect.Effect<void>
}>()("engram/StartupGate") {
  static readonly layer = Layer.effect(
    StartupGate,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const app = yield* Ref.make(Option.none<AppHandler>())
      const serving = yield* Effect.acquireRelease(Scope.make(), (scope, exit) => Scope.close(scope, exit))
      yield* server.serve(Effect.flatMap(Ref.get(app), Option.getOrElse(() => whileStarting))).pipe(
        Scope.provide(serving)
      )
      yield* Effect.logInfo("engram starting: the port is open; health answers 200, everything else 503 until ready")
        .pipe(Effect.annotateLogs({ port_open: HttpServer.formatAddress(server.address) }))
      return StartupGate.of({
        open: (handler) => Ref.set(app, Option.some(handler)),
        drain: Scope.close(serving, Exit.void)
      })
    })
  )
}
