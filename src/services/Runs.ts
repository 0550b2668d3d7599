import { Context, Data, Deferred, Duration, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import type { AiError } from "effect/ai"
import { SqlClient } from "effect/sql"
import { EngramConfig } from "../config.ts"
import { StoredCitation } from "../domain/Agent.ts"
import { ModelSettings } from "../domain/Settings.ts"
import { truncateCharacters } from "../domain/Text.ts"
import type { Citation, RetrievalTrace, RunOut, RunStatus, RunUsage } from "../domain/Run.ts"
import type { UserId } from "../domain/User.ts"
import { buildPrompt, citedNumbers, type DatedEvent, fitPassages, type HistoryMessage, type Passage } from "../llm/prompt.ts"
import { Agents } from "./Agents.ts"
import { Erasure } from "../stores/Erasure.ts"
import { Generation, LlmClient } from "../adapters/LlmClient.ts"
import { Retriever } from "./Retriever.ts"
import { Settings } from "./Settings.ts"

export type RunsError =
  | { readonly _tag: "AgentNotFound"; readonly id: string }
  | { readonly _tag: "ConversationNotFound"; readonly id: string }
  | { readonly _tag: "RunNotFound"; readonly id: string }
  | { readonly _tag: "RunFinished"; readonly id: string; readonly status: RunStatus }

export class RunsFailure extends Data.TaggedError("RunsFailure")<{ readonly reason: RunsError }> {}

export interface AskInput {
  readonly owner: UserId
  readonly agentId: string
  readonly question: string
  /** Continue this conversation (history in, question and answer appended). */
  readonly conversationId?: string | undefined
  /** Earlier turns given by the caller instead of a stored conversation (the chat-completions endpoint). */
  readonly history?: ReadonlyArray<HistoryMessage> | undefined
  /** Instructions the caller adds after the agent's own (the chat-completions endpoint's system messages). */
  readonly extraInstructions?: string | undefined
  /** Per-request generation settings over the agent's own. */
  readonly generation?: { readonly temperature?: number; readonly maxTokens?: number; readonly stop?: ReadonlyArray<string> }
  /** Search only those of the agent's sources that are among these (an MCP token sees its own source only). */
  readonly withinSources?: ReadonlyArray<string> | undefined
}

/** What a run reports while it works; `done` carries the final run (completed, cancelled or failed). */
export type RunEvent =
  | { readonly type: "run.started"; readonly run: RunOut }
  | { readonly type: "retrieval"; readonly retrieval: RetrievalTrace }
  | { readonly type: "delta"; readonly text: string }
  | { readonly type: "citations"; readonly citations: ReadonlyArray<Citation> }
  | { readonly type: "done"; readonly run: RunOut }

/** History turns given to the answerer from a stored conversation. */
const historyTurns = 20
const quoteLength = 500
/** Dated events shown with one passage at most. */
const eventsPerPassage = 8
/** How often live runs prove they are alive; four missed beats mark a run as interrupted. */
const heartbeatSeconds = 15

interface RunRow {
  readonly id: string
  readonly agent_id: string
  readonly conversation_id: string | null
  readonly question: string
  readonly status: RunStatus
  readonly answer: string
  readonly citations: ReadonlyArray<Citation>
  readonly retrieval: RetrievalTrace | null
  readonly usage: RunUsage | null
  readonly provider: string
  readonly model: string | null
  readonly error_code: string | null
  readonly error_message: string | null
  readonly created_at: Date
  readonly finished_at: Date | null
}

const decodeCitations = Schema.decodeUnknownSync(Schema.Array(StoredCitation))

const toRunOut = (row: RunRow): RunOut => ({
  id: row.id,
  agent_id: row.agent_id,
  conversation_id: row.conversation_id,
  question: row.question,
  status: row.status,
  answer: row.answer,
  citations: decodeCitations(row.citations),
  retrieval: row.retrieval,
  usage: row.usage,
  provider: row.provider,
  model: row.model,
  error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? "" },
  created_at: row.created_at.toISOString(),
  finished_at: row.finished_at?.toISOString() ?? null
})

const noKnowledge = "This agent has no sources to answer from yet: bind sources to it (PUT /agents/{id}/bindings)."

/** A run in progress on this node: `cancel` asks it to stop, `finished` resolves with its final state. */
interface Live {
  readonly cancel: Deferred.Deferred<void>
  readonly finished: Deferred.Deferred<RunOut>
}

/**
 * Answers questions with an agent: retrieval over the agent's bound sources, a prompt with numbered passages,
 * the configured language model (or the extractive answerer), citations mapped back to chunks, and the run
 * recorded with its state. A run is a stream of events; ending it early (cancel, client disconnect) interrupts
 * retrieval or generation and records the run as cancelled.
 */
export class Runs extends Context.Service<Runs, {
  /** Starts a run: validates the agent and conversation, records it as running, and returns its events. */
  readonly start: (input: AskInput) => Effect.Effect<Stream.Stream<RunEvent>, RunsFailure>
  readonly get: (owner: UserId, agentId: string, runId: string) => Effect.Effect<RunOut, RunsFailure>
  /** Stops a running run and returns it as recorded (cancelled); a finished run is RunFinished. */
  readonly cancel: (owner: UserId, agentId: string, runId: string) => Effect.Effect<RunOut, RunsFailure>
  /**
   * Shutdown: every run live on this node may finish within `grace`; those still running then are cancelled
   * (their streams end with `done`, cancelled), waiting at most 5 s more.
   */
  readonly finishAll: (grace: Duration.Duration) => Effect.Effect<void>
}>()("engram/Runs") {
  static readonly layer = Layer.effect(
    Runs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* EngramConfig
      const agents = yield* Agents
      const retriever = yield* Retriever
      const llm = yield* LlmClient
      const userSettings = yield* Settings
      const erasure = yield* Erasure
      const live = new Map<string, Live>()

      // Every process keeps its live runs' heartbeats fresh; a running run whose heartbeat stopped belonged to a
      // process that went away (crash, kill, restart) and can never finish, so it is recorded as failed.
      yield* Effect.gen(function*() {
        const ids = [...live.keys()]
        if (ids.length > 0) yield* sql`UPDATE runs SET heartbeat_at = now() WHERE id = ANY(${ids}::text[])`
        yield* sql`
          UPDATE runs SET status = 'failed', error_code = 'interrupted',
            error_message = 'The service stopped while this run was in progress', finished_at = now()
          WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => ${heartbeatSeconds * 4})`
      }).pipe(
        Effect.catchCause((cause) => Effect.logWarning("run heartbeat failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.seconds(heartbeatSeconds))),
        Effect.forkScoped
      )

      const load = (runId: string) =>
        sql<RunRow>`SELECT * FROM runs WHERE id = ${runId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]))

      const settle = (runId: string, fields: {
        readonly status: Exclude<RunStatus, "running">
        readonly answer: string
        readonly citations?: ReadonlyArray<Citation>
        readonly usage?: RunUsage | null
        readonly error?: { readonly code: string; readonly message: string }
      }) =>
        sql<RunRow>`
          UPDATE runs SET status = ${fields.status}, answer = ${fields.answer},
            citations = ${JSON.stringify(fields.citations ?? [])}::jsonb,
            usage = ${fields.usage === undefined || fields.usage === null ? null : JSON.stringify(fields.usage)}::jsonb,
            error_code = ${fields.error?.code ?? null}, error_message = ${fields.error?.message ?? null},
            finished_at = now()
          WHERE id = ${runId} AND status = 'running'
          RETURNING *`.pipe(Effect.orDie)

      const retrieve = Effect.fn("Runs.retrieve")(function*(
        owner: UserId,
        agent: { readonly retrieval_settings: { strategy: RetrievalTrace["strategy"]; top_k: number; min_score: number } },
        sourceIds: ReadonlyArray<string>,
        question: string
      ) {
        const { strategy, top_k, min_score } = agent.retrieval_settings
        const search = (chosen: RetrievalTrace["strategy"]) =>
          retriever.search({ owner, query: question, strategy: chosen, topK: top_k, sourceIds, saveExploration: false })
        // An agent set to vector search still answers when dense retrieval is down, from the other lists.
        const response = yield* search(strategy).pipe(
          Effect.catchTag("RetrieverFailure", (failure) =>
            failure.reason._tag === "DenseUnavailable" && strategy === "vector"
              ? search("multi").pipe(Effect.map((fallback) => ({
                ...fallback,
                notices: [`vector search is unavailable (${failure.reason._tag === "DenseUnavailable" ? failure.reason.reason : ""}), used multi`, ...fallback.notices]
              })))
              : Effect.fail(failure)
          ),
          // Sources were checked when bound; one deleted since is simply gone.
          Effect.orElseSucceed(() => null)
        )
        const results = (response?.results ?? []).filter((result) => result.score >= min_score)
        return { response, results }
      })

      /** The events of the chunks whose time their text states, with the date it resolved to, by chunk. */
      const datedEvents = Effect.fn("Runs.datedEvents")(function*(chunkIds: ReadonlyArray<string>) {
        const byChunk = new Map<string, Array<DatedEvent>>()
        if (chunkIds.length === 0) return byChunk
        const rows = yield* sql<{
          chunk_id: string
          statement: string
          actor: string | null
          time_start: Date
          time_end: Date | null
          time_precision: string | null
        }>`
          SELECT c.chunk_id, e.statement, e.time_start, e.time_end, e.time_precision, (
              SELECT en.name FROM event_participants p JOIN entities en ON en.id = p.entity_id
              WHERE p.event_id = e.id AND p.role = 'actor' ORDER BY en.name LIMIT 1
            ) AS actor
          FROM event_chunks c
          JOIN events e ON e.id = c.event_id
          JOIN documents d ON d.id = e.document_id AND d.active_version = e.version
          WHERE c.chunk_id IN ${sql.in(chunkIds)} AND e.time_start IS NOT NULL AND e.time_text IS NOT NULL
            AND e.time_text <> ''
          ORDER BY c.chunk_id, e.ordinal, e.id`.pipe(Effect.orDie)
        for (const row of rows) {
          const list = byChunk.get(row.chunk_id) ?? []
          if (list.length >= eventsPerPassage || list.some((event) => event.statement === row.statement)) continue
          list.push({
            statement: row.statement,
            actor: row.actor,
            start: row.time_start.toISOString(),
            end: row.time_end?.toISOString() ?? null,
            precision: row.time_precision ?? "day"
          })
          byChunk.set(row.chunk_id, list)
        }
        return byChunk
      })

      const start = Effect.fn("Runs.start")(function*(input: AskInput) {
        const agent = yield* agents.get(input.owner, input.agentId).pipe(
          Effect.mapError(() => new RunsFailure({ reason: { _tag: "AgentNotFound", id: input.agentId } }))
        )
        const conversationId = input.conversationId ?? null
        let history: ReadonlyArray<HistoryMessage> = input.history ?? []
        if (conversationId !== null) {
          yield* agents.getConversation(input.owner, input.agentId, conversationId).pipe(
            Effect.mapError(() => new RunsFailure({ reason: { _tag: "ConversationNotFound", id: conversationId } }))
          )
          history = yield* agents.history(input.owner, conversationId, historyTurns).pipe(Effect.orDie)
        }
        // Agent overrides, then the user's model settings, then the provider's defaults.
        const defaults = yield* userSettings.get(input.owner, "model_settings", ModelSettings)
        const temperature = agent.model_settings.temperature ?? defaults.temperature
        const maxTokens = agent.model_settings.max_tokens ?? defaults.max_tokens
        const model = agent.model_settings.model ?? defaults.llm_model ?? llm.model
        const [row] = yield* sql<RunRow>`
          INSERT INTO runs (agent_id, owner_id, conversation_id, question, status, provider, model)
          VALUES (${agent.id}, ${input.owner}, ${conversationId}, ${input.question}, 'running', ${llm.provider},
            ${llm.provider === "extractive" ? null : model})
          RETURNING *`.pipe(Effect.orDie)
        const runId = row!.id
        if (conversationId !== null) {
          yield* agents.appendMessage({ conversationId, role: "user", content: input.question, runId, citations: [] })
            .pipe(Effect.orDie)
        }
        const entry: Live = { cancel: yield* Deferred.make<void>(), finished: yield* Deferred.make<RunOut>() }
        live.set(runId, entry)

        let answer = ""
        let usage: RunUsage | null = null
        let passages: ReadonlyArray<Passage> = []
        let chats = new Map<string, Pick<Citation, "speaker" | "spoken_at" | "spoken_until" | "messages">>()
        let searched: ReadonlyArray<string> = []
        let settled = false

        const finish = (fields: Parameters<typeof settle>[1]) =>
          Effect.gen(function*() {
            settled = true
            const final = yield* sql.withTransaction(Effect.gen(function*() {
              // A source or document deleted while this answer was written must not come back through it.
              const stored = yield* erasure.storableAnswer({
                text: fields.answer,
                citations: fields.citations ?? [],
                partial: fields.status !== "completed",
                searchedSourceIds: searched
              })
              if (stored.searchedSourceIds.length < searched.length) {
                yield* sql`UPDATE runs SET retrieval = jsonb_set(retrieval, '{searched_source_ids}',
                  ${JSON.stringify(stored.searchedSourceIds)}::jsonb) WHERE id = ${runId}`
              }
              const [updated] = yield* settle(runId, { ...fields, answer: stored.text, citations: stored.citations })
              if (conversationId !== null && fields.status === "completed") {
                yield* agents.appendMessage({
                  conversationId,
                  role: "assistant",
                  content: stored.text,
                  runId,
                  citations: stored.citations
                }).pipe(Effect.orDie)
              }
              return toRunOut(updated ?? (yield* load(runId))!)
            })).pipe(Effect.orDie)
            live.delete(runId)
            yield* Deferred.succeed(entry.finished, final)
            return final
          }).pipe(Effect.uninterruptible)

        const prepare = Effect.gen(function*() {
          const within = input.withinSources
          const sourceIds = within === undefined ? agent.source_ids : agent.source_ids.filter((id) => within.includes(id))
          if (sourceIds.length === 0) {
            return { trace: null, prompt: null }
          }
          const { response, results } = yield* retrieve(input.owner, agent, sourceIds, input.question)
          const events = yield* datedEvents(results.map((result) => result.chunk_id))
          passages = fitPassages(
            results.map((result) => ({
              chunkId: result.chunk_id,
              documentId: result.document_id,
              sourceId: result.source_id,
              title: result.document_title,
              text: result.text,
              messages: result.messages.map((message) => ({
                speaker: message.speaker,
                spokenAt: message.spoken_at,
                start: message.char_start - result.char_start,
                end: message.char_end - result.char_start
              })),
              events: events.get(result.chunk_id) ?? []
            })),
            settings.answerContextTokens
          )
          chats = new Map(results.map((result) => [result.chunk_id, {
            speaker: result.speaker,
            spoken_at: result.spoken_at,
            spoken_until: result.spoken_until,
            messages: result.messages
          }]))
          const trace: RetrievalTrace = {
            strategy: response?.strategy ?? agent.retrieval_settings.strategy,
            took_ms: response?.took_ms ?? 0,
            searched_source_ids: response?.searched_source_ids ?? [],
            results: results.length,
            passages: passages.length,
            notices: response?.notices ?? []
          }
          searched = trace.searched_source_ids
          yield* sql`UPDATE runs SET retrieval = ${JSON.stringify(trace)}::jsonb WHERE id = ${runId}`.pipe(Effect.orDie)
          const instructions = [agent.instructions, input.extraInstructions ?? ""].filter((text) => text.trim() !== "")
            .join("\n\n")
          const prompt = buildPrompt({ instructions, passages, history, question: input.question })
          return { trace, prompt }
        })

        const generation = {
          ...(temperature === undefined ? {} : { temperature }),
          ...(maxTokens === undefined ? {} : { maxTokens }),
          ...(model === null ? {} : { model }),
          ...input.generation
        }

        const completed = Effect.suspend(() => {
          const citations = citedNumbers(answer, passages.length).map((n): Citation => {
            const passage = passages[n - 1]!
            return {
              n,
              chunk_id: passage.chunkId,
              document_id: passage.documentId,
              source_id: passage.sourceId,
              title: passage.title,
              quote: truncateCharacters(passage.text, quoteLength),
              ...(chats.get(passage.chunkId) ?? { speaker: null, spoken_at: null, spoken_until: null, messages: [] })
            }
          })
          return finish({ status: "completed", answer, citations, usage }).pipe(
            Effect.map((run): ReadonlyArray<RunEvent> => [{ type: "citations", citations: run.citations }, {
              type: "done",
              run
            }])
          )
        })

        const failed = (error: AiError.AiError) =>
          finish({
            status: "failed",
            answer,
            usage,
            error: { code: "llm_failed", message: `The language model failed: ${error.message}` }
          }).pipe(Effect.map((run): ReadonlyArray<RunEvent> => [{ type: "done", run }]))

        const body: Stream.Stream<RunEvent> = Stream.unwrap(Effect.gen(function*() {
          const { trace, prompt } = yield* prepare
          if (prompt === null) {
            answer = noKnowledge
            return Stream.fromIterableEffect(completed)
          }
          const deltas = llm.languageModel.streamText({ prompt }).pipe(
            Stream.provideService(Generation, generation),
            Stream.map((part): RunEvent | null => {
              if (part.type === "text-delta") {
                answer += part.delta
                return part.delta === "" ? null : { type: "delta", text: part.delta }
              }
              if (part.type === "finish") {
                usage = {
                  input_tokens: part.usage.inputTokens.total ?? 0,
                  output_tokens: part.usage.outputTokens.total ?? 0
                }
              }
              return null
            }),
            Stream.filter((event): event is RunEvent => event !== null)
          )
          return Stream.fromIterable<RunEvent>([{ type: "retrieval", retrieval: trace! }]).pipe(
            Stream.concat(deltas),
            Stream.concat(Stream.fromIterableEffect(completed)),
            Stream.catch((error) => Stream.fromIterableEffect(failed(error)))
          )
        }))

        let ended = false
        // Cancelled (POST …/cancel, shutdown) while the client still listens: the last event says so.
        const cancelled = Stream.fromIterableEffect(Effect.suspend((): Effect.Effect<ReadonlyArray<RunEvent>> =>
          ended
            ? Effect.succeed([])
            : Effect.map(
              settled ? Deferred.await(entry.finished) : finish({ status: "cancelled", answer, usage }),
              (run) => [{ type: "done", run }]
            )
        ))

        const started: RunEvent = { type: "run.started", run: toRunOut(row!) }
        return Stream.make(started).pipe(
          Stream.concat(body),
          Stream.interruptWhen(Deferred.await(entry.cancel)),
          Stream.concat(cancelled),
          Stream.tap((event) => Effect.sync(() => (ended = event.type === "done"))),
          // Ended before it settled with nobody to tell: cancelled (a client that went away).
          Stream.ensuring(Effect.suspend(() => settled ? Effect.void : finish({ status: "cancelled", answer, usage })))
        )
      })

      const owned = (owner: UserId, agentId: string, runId: string) =>
        sql<RunRow>`SELECT * FROM runs WHERE id = ${runId} AND agent_id = ${agentId} AND owner_id = ${owner}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows[0] === undefined
              ? Effect.fail(new RunsFailure({ reason: { _tag: "RunNotFound", id: runId } }))
              : Effect.succeed(rows[0])
          )
        )

      const get = Effect.fn("Runs.get")(function*(owner: UserId, agentId: string, runId: string) {
        return toRunOut(yield* owned(owner, agentId, runId))
      })

      const cancel = Effect.fn("Runs.cancel")(function*(owner: UserId, agentId: string, runId: string) {
        const row = yield* owned(owner, agentId, runId)
        if (row.status !== "running") {
          return yield* Effect.fail(new RunsFailure({ reason: { _tag: "RunFinished", id: runId, status: row.status } }))
        }
        const entry = live.get(runId)
        if (entry === undefined) {
          // Running according to the database but not on this node (a run whose stream was never consumed).
          const [updated] = yield* settle(runId, { status: "cancelled", answer: row.answer })
          return toRunOut(updated ?? (yield* load(runId))!)
        }
        yield* Deferred.succeed(entry.cancel, undefined)
        const finished = yield* Deferred.await(entry.finished).pipe(Effect.timeoutOption("5 seconds"))
        if (Option.isSome(finished)) return finished.value
        // Nobody is consuming the run's events (its request is gone): settle it here.
        live.delete(runId)
        const [updated] = yield* settle(runId, { status: "cancelled", answer: row.answer })
        return toRunOut(updated ?? (yield* load(runId))!)
      })

      const finishAll = (grace: Duration.Duration) =>
        Effect.suspend(() =>
          Effect.forEach(
            [...live.values()],
            (entry) =>
              Deferred.await(entry.finished).pipe(
                Effect.timeoutOption(grace),
                Effect.flatMap(Option.match({
                  onSome: () => Effect.void,
                  onNone: () =>
                    Deferred.succeed(entry.cancel, undefined).pipe(
                      Effect.andThen(Deferred.await(entry.finished)),
                      Effect.timeoutOption("5 seconds")
                    )
                }))
              ),
            { concurrency: "unbounded", discard: true }
          )
        )

      return Runs.of({ start, get, cancel, finishAll })
    })
  ).pipe(Layer.provide(Erasure.layer))
}
