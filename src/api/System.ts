import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ModelSettings, Preferences } from "../domain/Settings.ts"
import { JobOut } from "../domain/Job.ts"
import { Forbidden, ServiceUnavailable } from "./Errors.ts"
import { Authentication } from "./Security.ts"

export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "Health" })

export const ReadinessCheck = Schema.Struct({
  name: Schema.String.annotate({ description: "The dependency, e.g. database" }),
  ready: Schema.Boolean,
  detail: Schema.String
}).annotate({ identifier: "ReadinessCheck" })

export const Readiness = Schema.Struct({
  status: Schema.Literals(["ready", "degraded"]).annotate({
    description: "degraded: serving, but a non-critical dependency (the embedding model) is unavailable"
  }),
  checks: Schema.Array(ReadinessCheck)
}).annotate({ identifier: "Readiness" })

export const Capabilities = Schema.Struct({
  engine: Schema.Struct({ name: Schema.Literal("engram"), version: Schema.String }),
  api_version: Schema.Literal("v1"),
  storage: Schema.Literals(["pglite", "postgres"]).annotate({
    description: "pglite: embedded database in the data directory; postgres: DATABASE_URL"
  }),
  auth: Schema.Struct({
    local_login: Schema.Boolean.annotate({ description: "Name-only login is enabled (ENGRAM_LOCAL_LOGIN)" }),
    registration: Schema.Boolean.annotate({ description: "POST /auth/register is open (ENGRAM_ALLOW_REGISTRATION)" })
  }),
  strategies: Schema.Array(Schema.String).annotate({ description: "Search strategies this instance serves" }),
  connectors: Schema.Array(Schema.String).annotate({ description: "Source connector kinds this instance serves" }),
  embedding: Schema.NullOr(Schema.Struct({ model: Schema.String, dimension: Schema.Int })).annotate({
    description: "The loaded embedding model; null while loading or when none is available"
  }),
  dense_retrieval: Schema.Struct({
    available: Schema.Boolean,
    reason: Schema.NullOr(Schema.String).annotate({ description: "Why not, when unavailable" })
  }),
  rerank: Schema.Struct({
    available: Schema.Boolean,
    model: Schema.NullOr(Schema.String),
    reason: Schema.NullOr(Schema.String).annotate({ description: "Why not, when unavailable (off, loading, failed)" })
  }).annotate({ description: "The cross-encoder that reorders multi results (ENGRAM_RERANK_MODEL_DIR)" }),
  llm: Schema.Struct({
    provider: Schema.Literals(["extractive", "openai-compatible"]).annotate({
      description: "openai-compatible: an LLM at ENGRAM_LLM_BASE_URL writes answers; extractive (no LLM configured): " +
        "answers are sentences selected from the sources, with citations, written by no model"
    }),
    model: Schema.NullOr(Schema.String).annotate({ description: "ENGRAM_LLM_MODEL; null for extractive" })
  }).annotate({ description: "The provider that answers agent questions" })
}).annotate({ identifier: "Capabilities" })

const publicEndpoint = (summary: string, description: string) =>
  OpenApi.annotations({ summary, description })

/** GET and PUT of one of the caller's JSON documents. */
const userDocument = <const Name extends string, S extends typeof ModelSettings | typeof Preferences>(
  name: Name,
  path: `/${string}`,
  schema: S,
  noun: string
) =>
  [
    HttpApiEndpoint.get(`get${name}`, path, { success: schema })
      .middleware(Authentication)
      .annotateMerge(OpenApi.annotations({
        summary: `The caller's ${noun}`,
        description: `An empty object until the caller saves ${noun}.`
      })),
    HttpApiEndpoint.put(`put${name}`, path, { payload: schema, success: schema })
      .middleware(Authentication)
      .annotateMerge(OpenApi.annotations({
        summary: `Replace the caller's ${noun}`,
        description: "Replaces the whole document; omitted fields are removed. Unknown fields are rejected (422)."
      }))
  ] as const

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health", { success: Health }).annotateMerge(
      publicEndpoint("Liveness", "200 whenever the process can answer; no token needed.")
    ),
    HttpApiEndpoint.get("ready", "/ready", { success: Readiness, error: ServiceUnavailable }).annotateMerge(
      publicEndpoint(
        "Readiness",
        "200 when the database is reachable and migrated and the workers run; status degraded when the " +
          "embedding model is unavailable (the node still serves); 503 not_ready naming the dependency otherwise. " +
          "From the moment the port opens until the node serves, this answers 503 not_ready, health 200, and every " +
          "other endpoint 503 starting (Retry-After: 1). Use it for container health checks and load balancers. " +
          "No token needed."
      )
    ),
    HttpApiEndpoint.get("capabilities", "/capabilities", { success: Capabilities }).annotateMerge(
      publicEndpoint("Capabilities", "The engine, its version, the storage engine and the features this instance serves.")
    ),
    HttpApiEndpoint.post("reindex", "/reindex", {
      success: JobOut.pipe(HttpApiSchema.status(202)),
      error: [Forbidden, ServiceUnavailable]
    }).middleware(Authentication).annotateMerge(OpenApi.annotations({
      summary: "Re-embed every chunk with the configured model (administrators)",
      description: "A background job embeds every searchable chunk of every user with the loaded embedding " +
        "model into a new index and switches to it atomically when done (vectors of two models are never mixed). " +
        "Instance-wide, so only administrators may start it: the users the operator names in ENGRAM_ADMINS " +
        "(comma-separated user names, compared without case). 403 admin_required for anyone else; 503 " +
        "no_embedding_model when no model is loaded."
    })),
    ...userDocument("ModelSettings", "/model-settings", ModelSettings, "model settings"),
    ...userDocument("Preferences", "/preferences", Preferences, "preferences")
  )
  .prefix("/system")
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Liveness, readiness, capabilities, settings" }))
{}
