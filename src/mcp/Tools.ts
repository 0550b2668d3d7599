import { Schema } from "effect"
import { Tool, Toolkit } from "effect/ai"
import { EntityDetail, EventOut } from "../domain/Graph.ts"
import { ExpandOut, ExpandRequest } from "../domain/Universe.ts"
import { Strategy } from "../domain/Search.ts"
import { IsoDateTime, SpeakerName } from "../domain/Document.ts"
import { IdText, textOf, trimmedTextOf } from "../domain/Text.ts"
import { McpCallerRef } from "./Caller.ts"

/** A tool call that cannot be served: the client sees a tool error with this message (isError), never a dropped call. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", { message: Schema.String }) {}

const SourceIds = Schema.Array(IdText).check(Schema.isMaxLength(100))

/** What an answer or a hit rests on: enough to quote it and to fetch the document. */
export const Citation = Schema.Struct({
  document_id: Schema.String,
  title: Schema.String,
  chunk_id: Schema.String,
  quote: Schema.String,
  source_id: Schema.String,
  speaker: Schema.NullOr(Schema.String),
  spoken_at: Schema.NullOr(Schema.String)
})

const SearchHit = Schema.Struct({ ...Citation.fields, score: Schema.Number })

const SourceSummary = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  connector: Schema.String,
  status: Schema.String,
  documents: Schema.Record(Schema.String, Schema.Number),
  created_at: Schema.String
})

const AgentSummary = Schema.Struct({ id: Schema.String, name: Schema.String, description: Schema.NullOr(Schema.String) })

const JobStatus = Schema.Struct({
  job_id: Schema.String,
  status: Schema.String,
  stage: Schema.NullOr(Schema.String),
  progress: Schema.Struct({ done: Schema.Number, total: Schema.Number }),
  document_id: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String }))
})

const common = { failure: ToolError, dependencies: [McpCallerRef] }

export const SearchTool = Tool.make("search", {
  ...common,
  description: "Search the user's knowledge (their documents, notes and chat messages) and get the best-matching " +
    "passages with citations. Use it first for any question about what the user has stored. `multi` (default) " +
    "fuses keyword, semantic and entity/event-graph search; `lexical` is keyword only.",
  parameters: Schema.Struct({
    query: textOf(1, 4000).annotate({ description: "What to look for, in natural language or keywords" }),
    strategy: Schema.optionalKey(Strategy),
    top_k: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 50 })).annotate({
      description: "How many passages to return (default 8)"
    })),
    source_ids: Schema.optionalKey(SourceIds.annotate({ description: "Only these sources (ids from list_sources)" }))
  }),
  success: Schema.Struct({ results: Schema.Array(SearchHit), notices: Schema.Array(Schema.String) })
}).annotate(Tool.Readonly, true)

export const ListSourcesTool = Tool.make("list_sources", {
  ...common,
  description: "List the knowledge sources this connection can read (id, name, connector, document counts by " +
    "status). Source ids narrow search, timeline and add_memory.",
  success: Schema.Struct({ sources: Schema.Array(SourceSummary) })
}).annotate(Tool.Readonly, true)

export const ListAgentsTool = Tool.make("list_agents", {
  ...common,
  description: "List the agents that can answer questions with `ask` over the sources this connection can read.",
  success: Schema.Struct({ agents: Schema.Array(AgentSummary) })
}).annotate(Tool.Readonly, true)

export const GetDocumentTool = Tool.make("get_document", {
  ...common,
  description: "A document's metadata (title, kind, status, date, chunk count) and the start of its text. Use it " +
    "to read around a search hit (its document_id).",
  parameters: Schema.Struct({
    document_id: IdText,
    preview_characters: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20_000 })).annotate({
      description: "How much of the text to return (default 2000)"
    }))
  }),
  success: Schema.Struct({
    document: Schema.Struct({
      id: Schema.String,
      source_id: Schema.String,
      title: Schema.String,
      kind: Schema.String,
      status: Schema.String,
      date: Schema.NullOr(Schema.String),
      chunk_count: Schema.Number,
      created_at: Schema.String
    }),
    preview: Schema.NullOr(Schema.String),
    truncated: Schema.Boolean
  })
}).annotate(Tool.Readonly, true)

export const GetEntityTool = Tool.make("get_entity", {
  ...common,
  description: "A person, organisation, place, product or work from the knowledge graph: its aliases, the events " +
    "it takes part in (with resolved times), related entities and the passages that mention it. Give entity_id " +
    "(from an earlier result) or name.",
  parameters: Schema.Struct({
    entity_id: Schema.optionalKey(IdText),
    name: Schema.optionalKey(trimmedTextOf(1, 200))
  }),
  success: EntityDetail
}).annotate(Tool.Readonly, true)

export const TimelineTool = Tool.make("timeline", {
  ...common,
  description: "Dated events in time order: of one entity (entity_id) or of a source (source_id), optionally " +
    "within [from, to). Answers 'what happened when' and 'what did X do in May'.",
  parameters: Schema.Struct({
    source_id: Schema.optionalKey(IdText),
    entity_id: Schema.optionalKey(IdText),
    from: Schema.optionalKey(IsoDateTime),
    to: Schema.optionalKey(IsoDateTime),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 })))
  }),
  success: Schema.Struct({ events: Schema.Array(EventOut), more: Schema.Boolean })
}).annotate(Tool.Readonly, true)

export const ExploreTool = Tool.make("explore", {
  ...common,
  description: "Walk the knowledge map from a node: a community's entities, an entity's events, related entities " +
    "and documents, an event's participants and passages, a document's entities and events, ranked by evidence " +
    "and paginated (next_cursor). Node ids look like entity:<id>, event:<id>, document:<id>, community:<source>:<n>.",
  parameters: Schema.Struct({
    node_id: ExpandRequest.fields.node_id,
    kinds: ExpandRequest.fields.kinds,
    from: ExpandRequest.fields.from,
    to: ExpandRequest.fields.to,
    limit: ExpandRequest.fields.limit,
    cursor: ExpandRequest.fields.cursor
  }),
  success: ExpandOut
}).annotate(Tool.Readonly, true)

export const AskTool = Tool.make("ask", {
  ...common,
  description: "Ask an agent (see list_agents) a question; it searches its sources and answers with citations. " +
    "Sends progress notifications while it works.",
  parameters: Schema.Struct({ agent_id: IdText, question: textOf(1, 8000) }),
  success: Schema.Struct({
    run_id: Schema.String,
    status: Schema.String,
    answer: Schema.String,
    citations: Schema.Array(Citation)
  })
}).annotate(Tool.Readonly, true)

export const AddMemoryTool = Tool.make("add_memory", {
  ...common,
  description: "Store text or chat messages in a source so that they become searchable. Returns at once with the " +
    "document and job ids; processing runs in the background (poll job_status). Needs a source whose MCP settings " +
    "allow writes.",
  parameters: Schema.Struct({
    source_id: Schema.optionalKey(IdText.annotate({ description: "Where to store it; optional with one source" })),
    title: trimmedTextOf(1, 500),
    text: Schema.optionalKey(textOf(1, 1_000_000)),
    messages: Schema.optionalKey(
      Schema.Array(Schema.Struct({
        speaker: SpeakerName,
        content: textOf(1, 100_000),
        timestamp: Schema.optionalKey(IsoDateTime)
      })).check(Schema.isBetweenLength(1, 10_000))
    ),
    date: Schema.optionalKey(IsoDateTime.annotate({ description: "The text's own date; anchors 'yesterday' etc." }))
  }),
  success: Schema.Struct({
    document_id: Schema.String,
    job_id: Schema.NullOr(Schema.String),
    status: Schema.String,
    duplicate: Schema.Boolean
  })
}).annotate(Tool.Destructive, false)

export const JobStatusTool = Tool.make("job_status", {
  ...common,
  description: "The state of a background job from add_memory: queued, running, succeeded (searchable), failed.",
  parameters: Schema.Struct({ job_id: IdText }),
  success: JobStatus
}).annotate(Tool.Readonly, true)

export const EngramTools = Toolkit.make(
  SearchTool,
  ListSourcesTool,
  ListAgentsTool,
  GetDocumentTool,
  GetEntityTool,
  TimelineTool,
  ExploreTool,
  AskTool,
  AddMemoryTool,
  JobStatusTool
)
