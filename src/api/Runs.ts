import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { AskRequest, PostMessageRequest, RunOut } from "../domain/Run.ts"
import { IdText } from "../domain/Text.ts"
import { BadGateway, Conflict, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const AgentParams = Schema.Struct({ agent_id: IdText })
const RunParams = Schema.Struct({ agent_id: IdText, run_id: IdText })
const ConversationParams = Schema.Struct({ agent_id: IdText, conversation_id: IdText })

const answering = "The agent searches its bound sources with its retrieval settings, gives the answerer the " +
  "results as numbered passages (within ENGRAM_ANSWER_CONTEXT_TOKENS) and returns the answer with its [n] " +
  "citations mapped to chunks. An agent with no bindings answers that it has no sources, without error. " +
  "The answerer is the configured language model (provider openai-compatible) or, without one, the extractive " +
  "answerer, which selects sentences from the passages (provider extractive). With stream true the response is " +
  "text/event-stream: `run.started` (the run), `retrieval` (the trace), `delta` ({text}) events, `citations`, " +
  "then `done` (the final run); closing the stream cancels the run. A run cancelled while the stream is open " +
  "(POST …/runs/{run_id}/cancel, or the server shutting down) ends its stream with `done` whose run has status " +
  "cancelled. Without stream the final run is returned; " +
  "502 llm_failed when the language model failed (the run is recorded as failed)."

export class RunsApi extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.post("ask", "/agents/:agent_id/ask", {
      params: AgentParams,
      payload: AskRequest,
      success: RunOut,
      error: [NotFound, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Ask an agent a question", description: answering })),
    HttpApiEndpoint.post("postMessage", "/agents/:agent_id/conversations/:conversation_id/messages", {
      params: ConversationParams,
      payload: PostMessageRequest,
      success: RunOut,
      error: [NotFound, BadGateway]
    }).annotateMerge(OpenApi.annotations({
      summary: "Post a user message; the assistant's reply is produced as a run",
      description: "The conversation's earlier messages are the history. The user message is stored at once, the " +
        "assistant message when the run completes (a cancelled or failed run adds none). " + answering
    })),
    HttpApiEndpoint.get("getRun", "/agents/:agent_id/runs/:run_id", {
      params: RunParams,
      success: RunOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "A run: status, answer so far, citations, retrieval trace" })),
    HttpApiEndpoint.post("cancelRun", "/agents/:agent_id/runs/:run_id/cancel", {
      params: RunParams,
      success: RunOut,
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Cancel a running run",
      description: "Interrupts retrieval or generation at once and returns the run recorded as cancelled, with " +
        "the answer produced so far. 409 run_finished when it had already completed, failed or been cancelled."
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Runs", description: "Questions to agents and their answers" }))
{}
