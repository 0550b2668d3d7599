import { Duration, Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { Api } from "./api/Api.ts"
import { EngramConfig } from "./config.ts"
import { AgentsHandlers } from "./http/Agents.ts"
import { AuthHandlers } from "./http/Auth.ts"
import { DocumentsHandlers } from "./http/Documents.ts"
import { ExplorationsHandlers } from "./http/Explorations.ts"
import { GraphHandlers } from "./http/Graph.ts"
import { JobsHandlers } from "./http/Jobs.ts"
import { McpConfigHandlers } from "./http/Mcp.ts"
import { RunsHandlers } from "./http/Runs.ts"
import { CompatHandlers } from "./http/Compat.ts"
import { SearchHandlers } from "./http/Search.ts"
import { SourcesHandlers } from "./http/Sources.ts"
import { CorsLive } from "./http/Cors.ts"
import { RequestEnvelope } from "./http/Envelope.ts"
import { SystemHandlers } from "./http/System.ts"
import { TimelineHandlers } from "./http/Timeline.ts"
import { UniverseHandlers } from "./http/Universe.ts"
import { servingProbesOnly, StartupGate } from "./http/Startup.ts"
import { RequestValidationLive } from "./http/Validation.ts"
import { Agents } from "./services/Agents.ts"
import { Auth } from "./services/Auth.ts"
import { Db } from "./adapters/Db.ts"
import { Documents } from "./services/Documents.ts"
import { Embedder } from "./adapters/Embedder.ts"
import { Explorations } from "./services/Explorations.ts"
import { Extractor } from "./adapters/Extractor.ts"
import { Graph } from "./stores/Graph.ts"
import { GraphSearch } from "./services/GraphSearch.ts"
import { IngestThreads } from "./adapters/IngestThreads.ts"
import { Jobs } from "./stores/Jobs.ts"
import { LexicalIndex } from "./stores/LexicalIndex.ts"
import { Lifecycle } from "./stores/Lifecycle.ts"
import { LlmClient } from "./adapters/LlmClient.ts"
import { Pipeline } from "./background/Pipeline.ts"
import { Reranker } from "./adapters/Reranker.ts"
import { Retriever } from "./services/Retriever.ts"
import { Runs } from "./services/Runs.ts"
import { Sources } from "./services/Sources.ts"
import { Syncs } from "./services/Syncs.ts"
import { Timeline } from "./services/Timeline.ts"
import { VectorIndex } from "./stores/VectorIndex.ts"
import { IndexReconciler, Workers } from "./background/Workers.ts"
import { UniverseRecompute } from "./background/Universe.ts"
import { UniverseMaps } from "./stores/Universe.ts"
import { Settings } from "./services/Settings.ts"
import { Users } from "./services/Users.ts"
import { McpAccess } from "./services/McpAccess.ts"
import { McpEndpoint } from "./mcp/Endpoint.ts"
import { MetricsRoute } from "./observability/Metrics.ts"
import { Universe } from "./services/Universe.ts"
import { shrinkHeapSoon } from "./heap.ts"

const Ingestion = Syncs.layer.pipe(
  Layer.provideMerge(Documents.layer),
  Layer.provideMerge(Sources.layer),
  Layer.provideMerge(Lifecycle.layer)
)

const Processing = Layer.mergeAll(Workers.layer, IndexReconciler, UniverseRecompute, Explorations.layer).pipe(
  Layer.provideMerge(Retriever.layer),
  Layer.provideMerge(Pipeline.layer),
  Layer.provideMerge(Layer.mergeAll(VectorIndex.layer, Extractor.layer)),
  Layer.provideMerge(IngestThreads.layer)
)

/** Services shared by the HTTP handlers and the workers, on one database. */
export const AppServices = Layer.mergeAll(Runs.layer, McpAccess.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(
    Auth.layer,
    Settings.layer,
    Agents.layer,
    Processing.pipe(Layer.provideMerge(Ingestion))
  )),
  Layer.provide(Users.layer),
  Layer.provideMerge(Layer.mergeAll(
    Jobs.layer,
    Embedder.layer,
    Reranker.layer,
    LexicalIndex.layer,
    GraphSearch.layer,
    Graph.layer,
    Timeline.layer,
    UniverseMaps.layer,
    Universe.layer,
    LlmClient.layer
  )),
  Layer.provideMerge(Db.layer)
)

/**
 * The interactive API reference at /docs (Scalar, its 6 MB script inline): built with its first visit, so a service
 * nobody reads the reference of never loads the script (about 13 MB of the idle service's memory).
 */
const ApiReference = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const scope = yield* Scope.Scope
  const reference = yield* Effect.cached(
    HttpRouter.toHttpEffect(HttpApiScalar.layer(Api, { path: "/docs" })).pipe(Effect.provideService(Scope.Scope, scope))
  )
  yield* router.add("GET", "/docs", Effect.flatten(reference))
}))

const Routes = Layer.mergeAll(
  HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
    Layer.provide(
      Layer.mergeAll(
        SystemHandlers,
        AuthHandlers,
        SourcesHandlers,
        McpConfigHandlers,
        DocumentsHandlers,
        JobsHandlers,
        SearchHandlers,
        GraphHandlers,
        TimelineHandlers,
        ExplorationsHandlers,
        UniverseHandlers,
        AgentsHandlers,
        RunsHandlers,
        CompatHandlers
      ).pipe(
        Layer.provideMerge(RequestValidationLive)
      )
    )
  ),
  McpEndpoint,
  MetricsRoute,
  ApiReference,
  HttpRouter.add("GET", "/", HttpServerResponse.redirect("/docs")),
  RequestEnvelope,
  CorsLive
)

/**
 * Hands every request to the routes once they and the services under them are built (a worker process: its probes
 * only). On SIGTERM, before those services close and within ENGRAM_SHUTDOWN_TIMEOUT_SECONDS, all at once: the
 * workers hand their jobs back, the server stops accepting connections and lets the requests in flight finish,
 * and live answer streams finish too, the ones still running near the end cancelled (their streams say so).
 */
const OpenGate = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* EngramConfig
  const gate = yield* StartupGate
  const runs = yield* Runs
  const workers = yield* Workers
  const app = yield* HttpRouter.toHttpEffect(Routes)
  const timeout = config.shutdownTimeoutSeconds
  // Streams still running this long before the deadline are cancelled, so their `done` is sent before it.
  const runsGrace = Duration.seconds(timeout - Math.min(5, timeout / 2))
  const shutdown = Effect.logInfo("engram stopping").pipe(
    Effect.annotateLogs({ role: config.role, timeout_s: timeout }),
    Effect.andThen(Effect.all([workers.stop, runs.finishAll(runsGrace), gate.drain], {
      concurrency: "unbounded",
      discard: true
    }))
  )
  // Registered after the routes, so it runs before their finalizers and those of the services.
  yield* Effect.addFinalizer(() => shutdown)
  yield* gate.open(config.role === "worker" ? servingProbesOnly(app) : app)
  yield* Effect.sync(() => shrinkHeapSoon())
}))

/**
 * The whole HTTP service; needs an HttpServer and EngramConfig. The port answers from the start (the gate),
 * then the services are built, then the routes take over.
 */
export const ServerLive = OpenGate.pipe(
  Layer.provide(AppServices),
  Layer.provide(StartupGate.layer)
)
