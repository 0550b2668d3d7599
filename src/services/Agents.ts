import { Array as Arr, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import {
  type AgentCreate,
  AgentId,
  AgentModelSettingsOut,
  AgentOut,
  AgentRetrievalSettingsOut,
  type AgentUpdate,
  type Bindings,
  Citation,
  type ConversationCreate,
  ConversationId,
  ConversationOut,
  defaultModelSettings,
  defaultRetrievalSettings,
  MessageOut,
  MessageRole,
  StoredCitation
} from "../domain/Agent.ts"
import { cursorTimeFormat, PageCursor, takePage, TimeKey } from "../domain/Page.ts"
import type { UserId } from "../domain/User.ts"
import { ownedSources as checkOwnedSources } from "../stores/SourceAccess.ts"

export type AgentsError =
  | { readonly _tag: "AgentNotFound" }
  | { readonly _tag: "ConversationNotFound" }
  | { readonly _tag: "SourceNotFound"; readonly sourceId: string }
  | { readonly _tag: "InvalidCursor" }

export class AgentsFailure extends Data.TaggedError("AgentsFailure")<{ readonly reason: AgentsError }> {}

const fail = (reason: AgentsError) => Effect.fail(new AgentsFailure({ reason }))

const agentNotFound = fail({ _tag: "AgentNotFound" })
const conversationNotFound = fail({ _tag: "ConversationNotFound" })

export interface PageInput {
  readonly limit: number
  readonly cursor?: string | undefined
}

export interface PageOf<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
}

/** One earlier turn of a conversation, as the answering code feeds it to a model. */
export interface HistoryTurn {
  readonly role: MessageRole
  readonly content: string
}

export interface NewMessage {
  readonly conversationId: string
  readonly role: MessageRole
  readonly content: string
  readonly runId: string | null
  readonly citations: ReadonlyArray<Citation>
}

const agentsCursor = PageCursor("agents", TimeKey)
const conversationsCursor = PageCursor("conversations", TimeKey)
const messagesCursor = PageCursor("messages", TimeKey)

/** The position a cursor gives (the sort time as the database's microsecond text, and the id), or InvalidCursor. */
const decodePosition = (
  codec: typeof agentsCursor,
  cursor: string | undefined
): Effect.Effect<typeof TimeKey.Type | undefined, AgentsFailure> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  return Option.match(codec.decode(cursor), {
    onNone: () => fail({ _tag: "InvalidCursor" }),
    onSome: Effect.succeed
  })
}

const pageOf = <R extends { readonly position: string; readonly id: string }, A>(
  codec: typeof agentsCursor,
  rows: ReadonlyArray<R>,
  limit: number,
  toOut: (row: R) => A
): PageOf<A> => {
  const taken = takePage(rows, limit, (last) => codec.encode({ at: last.position, id: last.id }))
  return { items: taken.rows.map(toOut), next_cursor: taken.next_cursor }
}

const AgentRow = Schema.Struct({
  id: AgentId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  instructions: Schema.String,
  model_settings: AgentModelSettingsOut,
  retrieval_settings: AgentRetrievalSettingsOut,
  source_ids: Schema.Array(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  position: Schema.String
})
type AgentRow = typeof AgentRow.Type

const toAgentOut = (row: AgentRow) =>
  new AgentOut({
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    model_settings: row.model_settings,
    retrieval_settings: row.retrieval_settings,
    source_ids: row.source_ids,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString()
  })

const ConversationRow = Schema.Struct({
  id: ConversationId,
  agent_id: AgentId,
  title: Schema.NullOr(Schema.String),
  message_count: Schema.Int,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  position: Schema.String
})
type ConversationRow = typeof ConversationRow.Type

const toConversationOut = (row: ConversationRow) =>
  new ConversationOut({
    id: row.id,
    agent_id: row.agent_id,
    title: row.title,
    message_count: row.message_count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString()
  })

const MessageRow = Schema.Struct({
  id: Schema.String,
  conversation_id: ConversationId,
  role: MessageRole,
  content: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  citations: Schema.Array(StoredCitation),
  created_at: Schema.Date,
  position: Schema.String
})
type MessageRow = typeof MessageRow.Type

const toMessageOut = (row: MessageRow) =>
  new MessageOut({
    id: row.id,
    conversation_id: row.conversation_id,
    role: row.role,
    content: row.content,
    run_id: row.run_id,
    citations: row.citations,
    created_at: row.created_at.toISOString()
  })

const decodeRows = <S extends Schema.Codec<any, any>>(schema: S) => (rows: ReadonlyArray<unknown>) =>
  Schema.decodeUnknownEffect(Schema.Array(schema))(rows).pipe(Effect.orDie)

export class Agents extends Context.Service<Agents, {
  /** Creates an agent with its settings (defaults filled) and initial bindings; an unowned source fails it whole. */
  readonly create: (owner: UserId, input: AgentCreate) => Effect.Effect<AgentOut, AgentsFailure>
  /** The owner's agents, newest first. */
  readonly list: (owner: UserId, page: PageInput) => Effect.Effect<PageOf<AgentOut>, AgentsFailure>
  readonly get: (owner: UserId, agentId: string) => Effect.Effect<AgentOut, AgentsFailure>
  /** Changes the given fields; settings are merged field by field; source_ids replaces the bindings. */
  readonly update: (owner: UserId, agentId: string, patch: AgentUpdate) => Effect.Effect<AgentOut, AgentsFailure>
  /** Deletes the agent with its bindings, conversations, messages and runs; never its sources. */
  readonly remove: (owner: UserId, agentId: string) => Effect.Effect<void, AgentsFailure>
  readonly getBindings: (owner: UserId, agentId: string) => Effect.Effect<Bindings, AgentsFailure>
  /** Replaces the bound set in one transaction; a source the owner does not own fails it and changes nothing. */
  readonly putBindings: (
    owner: UserId,
    agentId: string,
    sourceIds: ReadonlyArray<string>
  ) => Effect.Effect<Bindings, AgentsFailure>
  readonly createConversation: (
    owner: UserId,
    agentId: string,
    input: ConversationCreate
  ) => Effect.Effect<ConversationOut, AgentsFailure>
  /** The agent's conversations, most recently active first. */
  readonly listConversations: (
    owner: UserId,
    agentId: string,
    page: PageInput
  ) => Effect.Effect<PageOf<ConversationOut>, AgentsFailure>
  readonly getConversation: (
    owner: UserId,
    agentId: string,
    conversationId: string
  ) => Effect.Effect<ConversationOut, AgentsFailure>
  /** Deletes the conversation and its messages; its runs stay, detached (conversation_id null). */
  readonly removeConversation: (
    owner: UserId,
    agentId: string,
    conversationId: string
  ) => Effect.Effect<void, AgentsFailure>
  /** The conversation's messages, oldest first. */
  readonly listMessages: (
    owner: UserId,
    agentId: string,
    conversationId: string,
    page: PageInput
  ) => Effect.Effect<PageOf<MessageOut>, AgentsFailure>
  /** For answering: the sources an agent may search, sorted; AgentNotFound unless `owner` owns the agent. */
  readonly boundSourceIds: (owner: UserId, agentId: string) => Effect.Effect<ReadonlyArray<string>, AgentsFailure>
  /**
   * For answering: the last `limit` messages of a conversation the owner owns, oldest first, to give a model
   * as earlier turns. ConversationNotFound otherwise.
   */
  readonly history: (
    owner: UserId,
    conversationId: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<HistoryTurn>, AgentsFailure>
  /**
   * For answering: stores a message and makes it the conversation's latest activity (updated_at). The caller has
   * already checked ownership; ConversationNotFound when the conversation was deleted meanwhile.
   */
  readonly appendMessage: (message: NewMessage) => Effect.Effect<MessageOut, AgentsFailure>
}>()("engram/Agents") {
  static readonly layer = Layer.effect(
    Agents,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const selectAgents = (where: Statement.Fragment) =>
        sql`
          SELECT a.id, a.name, a.description, a.instructions, a.model_settings, a.retrieval_settings,
            a.created_at, a.updated_at,
            ARRAY(SELECT b.source_id FROM agent_bindings b WHERE b.agent_id = a.id
              ORDER BY b.source_id COLLATE "C") AS source_ids,
            to_char(a.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM agents a
          WHERE ${where}`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              ...row,
              // Settings stored before a field existed get its default.
              model_settings: { ...defaultModelSettings, ...(row.model_settings as object) },
              retrieval_settings: { ...defaultRetrievalSettings, ...(row.retrieval_settings as object) }
            }))
          ),
          Effect.flatMap(decodeRows(AgentRow)),
          Effect.orDie
        )

      const selectConversations = (where: Statement.Fragment) =>
        sql`
          SELECT c.id, c.agent_id, c.title, c.created_at, c.updated_at,
            (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id)::int AS message_count,
            to_char(c.updated_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM conversations c
          WHERE ${where}`.pipe(Effect.flatMap(decodeRows(ConversationRow)), Effect.orDie)

      const selectMessages = (where: Statement.Fragment) =>
        sql`
          SELECT m.id, m.conversation_id, m.role, m.content, m.run_id, m.citations, m.created_at,
            to_char(m.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM messages m
          WHERE ${where}`.pipe(Effect.flatMap(decodeRows(MessageRow)), Effect.orDie)

      const ownedAgent = Effect.fn("Agents.ownedAgent")(function*(owner: UserId, agentId: string, lock = false) {
        const rows = yield* sql<{ id: string }>`
          SELECT id FROM agents WHERE id = ${agentId} AND owner_id = ${owner} ${lock ? sql`FOR UPDATE` : sql``}`
          .pipe(Effect.orDie)
        if (rows.length === 0) return yield* agentNotFound
      })

      const ownedConversation = Effect.fn("Agents.ownedConversation")(
        function*(owner: UserId, agentId: string, conversationId: string) {
          yield* ownedAgent(owner, agentId)
          const rows = yield* sql<{ id: string }>`
            SELECT id FROM conversations
            WHERE id = ${conversationId} AND agent_id = ${agentId} AND owner_id = ${owner}`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* conversationNotFound
        }
      )

      /** The distinct requested ids, sorted, once each is a source of `owner` (locked against deletion). */
      const ownedSources = Effect.fn("Agents.ownedSources")((owner: UserId, requested: ReadonlyArray<string>) =>
        checkOwnedSources(sql, owner, [...requested].sort(), { lock: true }).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) => fail({ _tag: "SourceNotFound", sourceId }))
        ))

      const replaceBindings = Effect.fn("Agents.replaceBindings")(
        function*(agentId: string, sourceIds: ReadonlyArray<string>) {
          yield* sql`DELETE FROM agent_bindings WHERE agent_id = ${agentId}`.pipe(Effect.orDie)
          const rows = sourceIds.map((source_id) => ({ agent_id: agentId, source_id }))
          if (Arr.isArrayNonEmpty(rows)) yield* sql`INSERT INTO agent_bindings ${sql.insert(rows)}`.pipe(Effect.orDie)
        }
      )

      const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))

      const get = Effect.fn("Agents.get")(function*(owner: UserId, agentId: string) {
        const [row] = yield* selectAgents(sql`a.id = ${agentId} AND a.owner_id = ${owner}`)
        if (row === undefined) return yield* agentNotFound
        return toAgentOut(row)
      })

      const create = Effect.fn("Agents.create")(function*(owner: UserId, input: AgentCreate) {
        const id = yield* transaction(Effect.gen(function*() {
          const sourceIds = yield* ownedSources(owner, input.source_ids ?? [])
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO agents (owner_id, name, description, instructions, model_settings, retrieval_settings)
            VALUES (${owner}, ${input.name}, ${input.description ?? null}, ${input.instructions ?? ""},
              ${JSON.stringify({ ...defaultModelSettings, ...input.model_settings })}::jsonb,
              ${JSON.stringify({ ...defaultRetrievalSettings, ...input.retrieval_settings })}::jsonb)
            RETURNING id`.pipe(Effect.orDie)
          yield* replaceBindings(row!.id, sourceIds)
          return row!.id
        }))
        return yield* get(owner, id)
      })

      const list = Effect.fn("Agents.list")(function*(owner: UserId, page: PageInput) {
        const after = yield* decodePosition(agentsCursor, page.cursor)
        const rows = yield* selectAgents(sql`a.owner_id = ${owner}
          ${after === undefined ? sql`` : sql`AND (a.created_at, a.id) < (${after.at}::timestamptz, ${after.id})`}
          ORDER BY a.created_at DESC, a.id DESC LIMIT ${page.limit + 1}`)
        return pageOf(agentsCursor, rows, page.limit, toAgentOut)
      })

      const update = Effect.fn("Agents.update")(function*(owner: UserId, agentId: string, patch: AgentUpdate) {
        yield* transaction(Effect.gen(function*() {
          yield* ownedAgent(owner, agentId, true)
          const [current] = yield* selectAgents(sql`a.id = ${agentId}`)
          if (patch.source_ids !== undefined) {
            yield* replaceBindings(agentId, yield* ownedSources(owner, patch.source_ids))
          }
          const modelSettings = { ...current!.model_settings, ...patch.model_settings }
          const retrievalSettings = { ...current!.retrieval_settings, ...patch.retrieval_settings }
          yield* sql`
            UPDATE agents SET
              name = ${patch.name ?? current!.name},
              description = ${patch.description === undefined ? current!.description : patch.description},
              instructions = ${patch.instructions ?? current!.instructions},
              model_settings = ${JSON.stringify(modelSettings)}::jsonb,
              retrieval_settings = ${JSON.stringify(retrievalSettings)}::jsonb,
              updated_at = now()
            WHERE id = ${agentId}`.pipe(Effect.orDie)
        }))
        return yield* get(owner, agentId)
      })

      const remove = Effect.fn("Agents.remove")(function*(owner: UserId, agentId: string) {
        const rows = yield* sql`DELETE FROM agents WHERE id = ${agentId} AND owner_id = ${owner} RETURNING id`
          .pipe(Effect.orDie)
        if (rows.length === 0) return yield* agentNotFound
      })

      const boundSourceIds = Effect.fn("Agents.boundSourceIds")(function*(owner: UserId, agentId: string) {
        yield* ownedAgent(owner, agentId)
        const rows = yield* sql<{ source_id: string }>`
          SELECT source_id FROM agent_bindings WHERE agent_id = ${agentId} ORDER BY source_id COLLATE "C"`
          .pipe(Effect.orDie)
        return rows.map((row) => row.source_id)
      })

      const getBindings = Effect.fn("Agents.getBindings")(function*(owner: UserId, agentId: string) {
        return { source_ids: yield* boundSourceIds(owner, agentId) }
      })

      const putBindings = Effect.fn("Agents.putBindings")(
        function*(owner: UserId, agentId: string, sourceIds: ReadonlyArray<string>) {
          yield* transaction(Effect.gen(function*() {
            yield* ownedAgent(owner, agentId, true)
            yield* replaceBindings(agentId, yield* ownedSources(owner, sourceIds))
            yield* sql`UPDATE agents SET updated_at = now() WHERE id = ${agentId}`.pipe(Effect.orDie)
          }))
          return yield* getBindings(owner, agentId)
        }
      )

      const getConversation = Effect.fn("Agents.getConversation")(
        function*(owner: UserId, agentId: string, conversationId: string) {
          yield* ownedAgent(owner, agentId)
          const [row] = yield* selectConversations(
            sql`c.id = ${conversationId} AND c.agent_id = ${agentId} AND c.owner_id = ${owner}`
          )
          if (row === undefined) return yield* conversationNotFound
          return toConversationOut(row)
        }
      )

      const createConversation = Effect.fn("Agents.createConversation")(
        function*(owner: UserId, agentId: string, input: ConversationCreate) {
          yield* ownedAgent(owner, agentId)
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO conversations (agent_id, owner_id, title) VALUES (${agentId}, ${owner}, ${input.title ?? null})
            RETURNING id`.pipe(Effect.orDie)
          return yield* getConversation(owner, agentId, row!.id)
        }
      )

      const listConversations = Effect.fn("Agents.listConversations")(
        function*(owner: UserId, agentId: string, page: PageInput) {
          yield* ownedAgent(owner, agentId)
          const after = yield* decodePosition(conversationsCursor, page.cursor)
          const rows = yield* selectConversations(sql`c.agent_id = ${agentId} AND c.owner_id = ${owner}
            ${after === undefined ? sql`` : sql`AND (c.updated_at, c.id) < (${after.at}::timestamptz, ${after.id})`}
            ORDER BY c.updated_at DESC, c.id DESC LIMIT ${page.limit + 1}`)
          return pageOf(conversationsCursor, rows, page.limit, toConversationOut)
        }
      )

      const removeConversation = Effect.fn("Agents.removeConversation")(
        function*(owner: UserId, agentId: string, conversationId: string) {
          yield* ownedAgent(owner, agentId)
          const rows = yield* sql`
            DELETE FROM conversations WHERE id = ${conversationId} AND agent_id = ${agentId} AND owner_id = ${owner}
            RETURNING id`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* conversationNotFound
        }
      )

      const listMessages = Effect.fn("Agents.listMessages")(
        function*(owner: UserId, agentId: string, conversationId: string, page: PageInput) {
          yield* ownedConversation(owner, agentId, conversationId)
          const after = yield* decodePosition(messagesCursor, page.cursor)
          const rows = yield* selectMessages(sql`m.conversation_id = ${conversationId}
            ${after === undefined ? sql`` : sql`AND (m.created_at, m.id) > (${after.at}::timestamptz, ${after.id})`}
            ORDER BY m.created_at, m.id LIMIT ${page.limit + 1}`)
          return pageOf(messagesCursor, rows, page.limit, toMessageOut)
        }
      )

      const history = Effect.fn("Agents.history")(function*(owner: UserId, conversationId: string, limit: number) {
        const owned = yield* sql`SELECT 1 FROM conversations WHERE id = ${conversationId} AND owner_id = ${owner}`
          .pipe(Effect.orDie)
        if (owned.length === 0) return yield* conversationNotFound
        const rows = yield* sql<HistoryTurn>`
          SELECT role, content FROM (
            SELECT role, content, created_at, id FROM messages WHERE conversation_id = ${conversationId}
            ORDER BY created_at DESC, id DESC LIMIT ${Math.max(0, limit)}
          ) recent
          ORDER BY created_at, id`.pipe(Effect.orDie)
        return rows.map((row): HistoryTurn => ({ role: row.role, content: row.content }))
      })

      const appendMessage = Effect.fn("Agents.appendMessage")(function*(message: NewMessage) {
        const id = yield* transaction(Effect.gen(function*() {
          // clock_timestamp, not now(): a question and its answer written in one transaction must keep their order.
          const touched = yield* sql<{ at: Date }>`
            UPDATE conversations SET updated_at = clock_timestamp() WHERE id = ${message.conversationId}
            RETURNING updated_at AS at`.pipe(Effect.orDie)
          if (touched.length === 0) return yield* conversationNotFound
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO messages (conversation_id, role, content, run_id, citations, created_at)
            VALUES (${message.conversationId}, ${message.role}, ${message.content}, ${message.runId},
              ${JSON.stringify(message.citations)}::jsonb, ${touched[0]!.at})
            RETURNING id`.pipe(Effect.orDie)
          return row!.id
        }))
        const [row] = yield* selectMessages(sql`m.id = ${id}`)
        return toMessageOut(row!)
      })

      return Agents.of({
        create,
        list,
        get,
        update,
        remove,
        getBindings,
        putBindings,
        createConversation,
        listConversations,
        getConversation,
        removeConversation,
        listMessages,
        boundSourceIds,
        history,
        appendMessage
      })
    })
  )
}
