import { Effect, Option, Stream } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { SqlClient } from "effect/sql"
import type { Citation as RunCitation } from "../domain/Agent.ts"
import { truncateCharacters } from "../domain/Text.ts"
import { normalizeName } from "../extract/resolve.ts"
import { Agents } from "../services/Agents.ts"
import { Documents } from "../services/Documents.ts"
import { McpAccess, type McpCaller } from "../services/McpAccess.ts"
import { Retriever } from "../services/Retriever.ts"
import { Runs } from "../services/Runs.ts"
import { Sources } from "../services/Sources.ts"
import { Universe } from "../services/Universe.ts"
import { Graph } from "../stores/Graph.ts"
import { Jobs } from "../stores/Jobs.ts"
import { McpCallerRef } from "./Caller.ts"
import { EngramTools, ToolError } from "./Tools.ts"

const quoteLength = 500
const defaultPreview = 2000
const fail = (message: string) => Effect.fail(new ToolError({ message }))

const citationOf = (hit: {
  readonly document_id: string
  readonly document_title?: string
  readonly title?: string
  readonly chunk_id: string
  readonly text?: string
  readonly quote?: string
  readonly source_id: string
  readonly speaker: string | null
  readonly spoken_at: string | null
}) => ({
  document_id: hit.document_id,
  title: hit.document_title ?? hit.title ?? "",
  chunk_id: hit.chunk_id,
  quote: truncateCharacters(hit.quote ?? hit.text ?? "", quoteLength),
  source_id: hit.source_id,
  speaker: hit.speaker,
  spoken_at: hit.spoken_at
})

/**
 * The MCP tools over Engram's services. Every handler reads the caller (McpCallerRef) and reaches only the
 * sources it may: a source token exactly its source, an access token its owner's MCP-enabled sources. Anything
 * else behaves as missing, with the same message as an id that does not exist.
 */
export const EngramToolHandlers = EngramTools.toLayer(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const access = yield* McpAccess
  const retriever = yield* Retriever
  const sources = yield* Sources
  const documents = yield* Documents
  const graph = yield* Graph
  const agents = yield* Agents
  const runs = yield* Runs
  const jobs = yield* Jobs
  const server = yield* McpServer.McpServer
  const universe = yield* Universe

  /** The requested sources, each reachable, or the reachable ones; a foreign id fails like an unknown one. */
  const within = (caller: McpCaller, requested: ReadonlyArray<string> | undefined) =>
    Effect.gen(function*() {
      const reachable = yield* access.reachable(caller)
      if (requested === undefined) return reachable
      const missing = requested.find((id) => !reachable.includes(id))
      if (missing !== undefined) return yield* fail(`No source with id ${missing}`)
      return [...new Set(requested)]
    })

  /** The one source a call is about: the given one if reachable, else the only reachable one. */
  const oneSource = (caller: McpCaller, sourceId: string | undefined) =>
    Effect.gen(function*() {
      const reachable = yield* access.reachable(caller)
      if (sourceId !== undefined) {
        return reachable.includes(sourceId) ? sourceId : yield* fail(`No source with id ${sourceId}`)
      }
      if (reachable.length === 1) return reachable[0]!
      return yield* fail(
        reachable.length === 0 ? "There is no source to use" : "Give source_id (see list_sources)"
      )
    })

  const sourceOfRow = (table: "documents" | "entities", id: string, caller: McpCaller, what: string) =>
    Effect.gen(function*() {
      const rows = table === "documents"
        ? yield* sql<{ source_id: string }>`SELECT source_id FROM documents WHERE id = ${id}`.pipe(Effect.orDie)
        : yield* sql<{ source_id: string }>`SELECT source_id FROM entities WHERE id = ${id}`.pipe(Effect.orDie)
      const reachable = yield* access.reachable(caller)
      const sourceId = rows[0]?.source_id
      if (sourceId === undefined || !reachable.includes(sourceId)) return yield* fail(`No ${what} with id ${id}`)
      return sourceId
    })

  /** Reports progress to the client when it asked for it (a progressToken in the request's _meta). */
  const progress = (value: number, total: number | undefined, message: string) =>
    Effect.gen(function*() {
      const context = yield* Effect.serviceOption(McpSchema.McpRequestContext)
      const token = Option.isSome(context) ? context.value.requestMetadata?.progressToken : undefined
      if (typeof token !== "string" && typeof token !== "number") return
      yield* server.notifications["notifications/progress"]({ progressToken: token, progress: value, total, message })
        .pipe(Effect.ignore)
    })

  return {
    search: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const sourceIds = yield* within(caller, params.source_ids)
        if (sourceIds.length === 0) return { results: [], notices: ["there are no sources to search"] }
        const response = yield* retriever.search({
          owner: caller.owner,
          query: params.query,
          strategy: params.strategy ?? "multi",
          topK: params.top_k ?? 8,
          sourceIds,
          saveExploration: false
        }).pipe(Effect.catchTag("RetrieverFailure", ({ reason }) =>
          fail(
            reason._tag === "SourceNotFound"
              ? `No source with id ${reason.sourceId}`
              : `This search cannot run: ${reason.reason}`
          )
        ))
        return {
          results: response.results.map((hit) => ({ ...citationOf(hit), score: hit.score })),
          notices: response.notices
        }
      }),

    list_sources: () =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const ids = yield* access.reachable(caller)
        const found = yield* Effect.forEach(ids, (id) => sources.get(caller.owner, id).pipe(Effect.option))
        return {
          sources: found.flatMap((source) =>
            Option.isNone(source) ? [] : [{
              id: source.value.id,
              name: source.value.name,
              connector: source.value.connector_kind,
              status: source.value.status,
              documents: { ...source.value.documents },
              created_at: source.value.created_at
            }]
          )
        }
      }),

    list_agents: () =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const reachable = yield* access.reachable(caller)
        const listed: Array<{ id: string; name: string; description: string | null }> = []
        let cursor: string | undefined = undefined
        do {
          const page: { readonly items: ReadonlyArray<{ readonly id: string; readonly name: string; readonly description: string | null; readonly source_ids: ReadonlyArray<string> }>; readonly next_cursor: string | null } = yield* agents.list(caller.owner, { limit: 100, cursor }).pipe(Effect.orDie)
          for (const agent of page.items) {
            // An agent is listed when it searches at least one source this connection may read.
            if (agent.source_ids.some((id) => reachable.includes(id))) {
              listed.push({ id: agent.id, name: agent.name, description: agent.description })
            }
          }
          cursor = page.next_cursor ?? undefined
        } while (cursor !== undefined && listed.length < 500)
        return { agents: listed }
      }),

    get_document: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const sourceId = yield* sourceOfRow("documents", params.document_id, caller, "document")
        const document = yield* documents.get(caller.owner, sourceId, params.document_id).pipe(
          Effect.catch(() => fail(`No document with id ${params.document_id}`))
        )
        const wanted = params.preview_characters ?? defaultPreview
        const parsed = yield* documents.parsed(caller.owner, sourceId, params.document_id).pipe(Effect.option)
        const text = Option.isSome(parsed) ? parsed.value.text : null
        const preview = text === null ? null : truncateCharacters(text, wanted)
        return {
          document: {
            id: document.id,
            source_id: document.source_id,
            title: document.title,
            kind: document.kind,
            status: document.status,
            date: document.date,
            chunk_count: document.chunk_count,
            created_at: document.created_at
          },
          preview,
          truncated: text !== null && preview !== null && preview.length < text.length
        }
      }),

    get_entity: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        if ((params.entity_id === undefined) === (params.name === undefined)) {
          return yield* fail("Give either entity_id or name")
        }
        let entityId = params.entity_id
        if (entityId === undefined) {
          const reachable = yield* access.reachable(caller)
          const [row] = reachable.length === 0 ? [] : yield* sql<{ id: string }>`
            SELECT e.id FROM entity_keys k JOIN entities e ON e.id = k.entity_id
            WHERE k.source_id IN ${sql.in(reachable)} AND k.key = ${normalizeName(params.name!)}
            ORDER BY e.mention_count DESC, e.id LIMIT 1`.pipe(Effect.orDie)
          if (row === undefined) return yield* fail(`No entity named ${JSON.stringify(params.name)}`)
          entityId = row.id
        }
        const sourceId = yield* sourceOfRow("entities", entityId, caller, "entity")
        return yield* graph.getEntity(caller.owner, sourceId, entityId).pipe(
          Effect.catch(() => fail(`No entity with id ${entityId}`))
        )
      }),

    timeline: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const sourceId = params.entity_id !== undefined
          ? yield* sourceOfRow("entities", params.entity_id, caller, "entity")
          : yield* oneSource(caller, params.source_id)
        if (params.source_id !== undefined && params.source_id !== sourceId) {
          return yield* fail(`The entity ${params.entity_id} is not in the source ${params.source_id}`)
        }
        if (params.from !== undefined && params.to !== undefined && params.from >= params.to) {
          return yield* fail("`from` must be before `to`")
        }
        const page = yield* graph.listEvents(caller.owner, sourceId, {
          from: params.from,
          to: params.to,
          entityId: params.entity_id,
          limit: params.limit ?? 50
        }).pipe(Effect.catch(() => fail(`No source with id ${sourceId}`)))
        return { events: page.items, more: page.next_cursor !== null }
      }),

    explore: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const reachable = yield* access.reachable(caller)
        if (reachable.length === 0) return yield* fail(`No node with id ${params.node_id}`)
        return yield* universe.expand(caller.owner, { ...params, source_ids: reachable }).pipe(
          Effect.catch(({ reason }) =>
            fail(
              reason._tag === "InvalidCursor"
                ? "The cursor does not belong to this expansion"
                : reason._tag === "InvalidQuery"
                ? `Invalid arguments: ${reason.issues.map((issue) => `${issue.path} ${issue.message}`).join("; ")}`
                : `No node with id ${params.node_id}`
            )
          )
        )
      }),

    ask: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const reachable = yield* access.reachable(caller)
        const agent = yield* agents.get(caller.owner, params.agent_id).pipe(Effect.option)
        if (Option.isNone(agent) || !agent.value.source_ids.some((id) => reachable.includes(id))) {
          return yield* fail(`No agent with id ${params.agent_id}`)
        }
        yield* progress(0, 3, "searching")
        const events = yield* runs.start({
          owner: caller.owner,
          agentId: params.agent_id,
          question: params.question,
          withinSources: reachable
        }).pipe(Effect.catch(() => fail(`No agent with id ${params.agent_id}`)))
        let written = 0
        const final = yield* events.pipe(
          Stream.tap((event) => {
            switch (event.type) {
              case "retrieval":
                return progress(1, 3, `found ${event.retrieval.passages} passages`)
              case "delta":
                written += event.text.length
                return written === event.text.length ? progress(2, 3, "writing the answer") : Effect.void
              default:
                return Effect.void
            }
          }),
          Stream.runLast
        )
        const run = Option.isSome(final) && final.value.type === "done" ? final.value.run : null
        if (run === null) return yield* fail("The answer was not finished")
        yield* progress(3, 3, run.status)
        if (run.status === "failed") return yield* fail(`The answer failed: ${run.error?.message ?? "unknown error"}`)
        return {
          run_id: run.id,
          status: run.status,
          answer: run.answer,
          citations: run.citations.map((citation: RunCitation) => citationOf(citation))
        }
      }),

    add_memory: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        if ((params.text === undefined) === (params.messages === undefined)) {
          return yield* fail("Give either text or messages")
        }
        const sourceId = yield* oneSource(caller, params.source_id)
        if (!(yield* access.writable(caller, sourceId))) {
          return yield* fail(
            "This source does not accept writes over MCP; its owner can allow them (PUT /api/v1/sources/{id}/mcp " +
              "with allow_writes: true)"
          )
        }
        const document = yield* (params.messages === undefined
          ? documents.add(caller.owner, sourceId, {
            title: params.title,
            kind: "text",
            format: "markdown",
            bytes: new TextEncoder().encode(params.text!),
            date: params.date
          })
          : documents.addMessages(caller.owner, sourceId, params.title, params.messages)).pipe(
            Effect.catch((error) =>
              fail(
                "reason" in error && typeof error.reason === "object" && "message" in error.reason
                  ? String(error.reason.message)
                  : `The memory could not be stored (${error._tag})`
              )
            )
          )
        return {
          document_id: document.id,
          job_id: document.job_id,
          status: document.status,
          duplicate: document.duplicate
        }
      }),

    job_status: (params) =>
      Effect.gen(function*() {
        const caller = yield* McpCallerRef
        const reachable = yield* access.reachable(caller)
        const job = yield* jobs.findForOwner(params.job_id, caller.owner)
        if (Option.isNone(job) || job.value.source_id === null || !reachable.includes(job.value.source_id)) {
          return yield* fail(`No job with id ${params.job_id}`)
        }
        const row = job.value
        return {
          job_id: row.id,
          status: row.status,
          stage: row.stage,
          progress: { done: row.progress_done, total: row.progress_total },
          document_id: row.document_id,
          error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" }
        }
      })
  }
}))
