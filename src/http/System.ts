import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { Forbidden, httpError, ServiceUnavailable } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { EngramConfig } from "../config.ts"
import { ModelSettings, Preferences } from "../domain/Settings.ts"
import { Auth } from "../services/Auth.ts"
import { Db } from "../adapters/Db.ts"
import { Embedder, type EmbedderState } from "../adapters/Embedder.ts"
import { Reranker, type RerankerState } from "../adapters/Reranker.ts"
import { Jobs, toJobOut } from "../stores/Jobs.ts"
import { LlmClient } from "../adapters/LlmClient.ts"
import { Settings } from "../services/Settings.ts"
import { Sources } from "../services/Sources.ts"
import { Retriever } from "../services/Retriever.ts"
import { Workers } from "../background/Workers.ts"
import { engramVersion } from "../version.ts"
import { AuthenticationLive } from "./Authentication.ts"

const rerankCapability = (state: RerankerState) => {
  switch (state._tag) {
    case "Ready":
      return { available: true, model: state.name, reason: null }
    case "Off":
      return { available: false, model: null, reason: "no reranker is configured (ENGRAM_RERANK_MODEL_DIR)" }
    case "Loading":
      return { available: false, model: null, reason: "the reranker is loading" }
    case "Unavailable":
      return { available: false, model: null, reason: state.reason }
  }
}

const embedderCheck = (state: EmbedderState) => {
  switch (state._tag) {
    case "Ready":
      return { name: "embedder", ready: true, detail: `${state.model.name} (${state.model.dimension} dimensions)` }
    case "Loading":
      return { name: "embedder", ready: false, detail: `loading: ${state.detail}` }
    case "Unavailable":
      return { name: "embedder", ready: false, detail: `unavailable: ${state.reason}` }
  }
}

export const SystemHandlers = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fn(function*(handlers) {
    const config = yield* EngramConfig
    const db = yield* Db
    const settings = yield* Settings
    const embedder = yield* Embedder
    const workers = yield* Workers
    const jobs = yield* Jobs
    const sources = yield* Sources
    const retriever = yield* Retriever
    const reranker = yield* Reranker
    const llm = yield* LlmClient
    const auth = yield* Auth

    const capabilities = Effect.all([embedder.state, retriever.denseStatus, reranker.state]).pipe(Effect.map((
      [state, dense, rerank]
    ) => ({
      engine: { name: "engram" as const, version: engramVersion },
      api_version: "v1" as const,
      storage: db.engine,
      auth: { local_login: config.localLogin, registration: config.allowRegistration },
      strategies: dense.reason === null ? ["vector", "lexical", "multi"] : ["lexical", "multi"],
      connectors: sources.connectors.filter((connector) => connector.available).map((connector) => connector.kind),
      embedding: state._tag === "Ready" ? { model: state.model.name, dimension: state.model.dimension } : null,
      dense_retrieval: { available: dense.reason === null, reason: dense.reason },
      rerank: rerankCapability(rerank),
      llm: { provider: llm.provider, model: llm.model }
    })))

    const ready = Effect.gen(function*() {
      yield* db.check.pipe(
        Effect.mapError((error) => httpError(ServiceUnavailable, "not_ready", `Not ready: ${error.message}`))
      )
      const running = yield* workers.running
      const embedderStatus = embedderCheck(yield* embedder.state)
      return {
        status: embedderStatus.ready ? "ready" as const : "degraded" as const,
        checks: [
          { name: "database", ready: true, detail: "ok" },
          {
            name: "workers",
            ready: true,
            detail: config.role === "api"
              ? "not run by this process (ENGRAM_ROLE=api): worker processes take the jobs"
              : config.workerConcurrency === 0
              ? "disabled on this node (ENGRAM_WORKER_CONCURRENCY=0)"
              : `${running} running`
          },
          embedderStatus
        ]
      }
    })

    const reindex = Effect.gen(function*() {
      const user = yield* CurrentUser
      if (!auth.isAdministrator(user)) {
        return yield* httpError(
          Forbidden,
          "admin_required",
          "Reindexing is instance-wide: only administrators may start it. The operator names administrators " +
            "with ENGRAM_ADMINS (comma-separated user names)."
        )
      }
      const loaded = yield* embedder.state
      if (loaded._tag !== "Ready") {
        return yield* httpError(
          ServiceUnavailable,
          "no_embedding_model",
          `No embedding model is loaded to reindex with (${embedderCheck(loaded).detail})`
        )
      }
      const job = yield* jobs.enqueue({ ownerId: user.id, kind: "reindex" })
      yield* jobs.wake
      return toJobOut(job)
    })

    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => ready)
      .handle("capabilities", () => capabilities)
      .handle("reindex", () => reindex)
      .handle("getModelSettings", () =>
        Effect.flatMap(CurrentUser, (user) => settings.get(user.id, "model_settings", ModelSettings)))
      .handle("putModelSettings", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => settings.put(user.id, "model_settings", ModelSettings, payload)))
      .handle("getPreferences", () =>
        Effect.flatMap(CurrentUser, (user) => settings.get(user.id, "preferences", Preferences)))
      .handle("putPreferences", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => settings.put(user.id, "preferences", Preferences, payload)))
  })
).pipe(Layer.provide(AuthenticationLive))

