import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  AgentCreate,
  AgentOut,
  AgentUpdate,
  Bindings,
  ConversationCreate,
  ConversationOut,
  MessageOut
} from "../domain/Agent.ts"
import { IdText } from "../domain/Text.ts"
import { Page, PageQuery } from "../domain/Page.ts"
import { BadRequest, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

export const AgentParams = { agent_id: IdText }

export const ConversationParams = { ...AgentParams, conversation_id: IdText }

const described = (summary: string, description?: string) =>
  OpenApi.annotations(description === undefined ? { summary } : { summary, description })

const notFound = "Another user's agent answers exactly like a missing one: 404 agent_not_found."

const conversationNotFound = "A missing agent, or one of another user, is 404 agent_not_found; a conversation that " +
  "is missing, of another user or of another agent is 404 conversation_not_found."

const settings = "model_settings {temperature 0–2, max_tokens 1–32768, model}: each null (the default) means not " +
  "overridden, so the caller's model settings (GET /system/model-settings) apply, then the provider's default " +
  "(model: ENGRAM_LLM_MODEL). retrieval_settings {strategy vector|lexical|multi (default multi), top_k 1–50 " +
  "(default 8), min_score ≥ 0 (default 0): retrieved chunks scoring below it are dropped, on the strategy's own " +
  "score}. Responses always carry every settings field, defaults filled."

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.post("create", "/", {
      payload: AgentCreate,
      success: AgentOut.pipe(HttpApiSchema.status(201)),
      error: NotFound
    }).annotateMerge(described(
      "Create an agent",
      "name (1–200 characters, trimmed) is required; description (≤ 2000, nullable), instructions (the system " +
        `prompt, ≤ 20000, default "") and the settings are optional. ${settings} source_ids (≤ 256) are the ` +
        "initial bindings: a source you do not own is 404 source_not_found and nothing is created. Unknown fields " +
        "and out-of-range values are 422."
    )),
    HttpApiEndpoint.get("list", "/", {
      query: PageQuery,
      success: Page(AgentOut),
      error: BadRequest
    }).annotateMerge(described("The caller's agents, newest first")),
    HttpApiEndpoint.get("get", "/:agent_id", { params: AgentParams, success: AgentOut, error: NotFound })
      .annotateMerge(described("An agent with its settings and bound sources", notFound)),
    HttpApiEndpoint.patch("update", "/:agent_id", {
      params: AgentParams,
      payload: AgentUpdate,
      success: AgentOut,
      error: NotFound
    }).annotateMerge(described(
      "Change an agent",
      "Every field is optional; absent fields keep their value. description: null clears it. model_settings and " +
        "retrieval_settings are merged field by field (a model_settings field set to null removes that " +
        "override). source_ids replaces the bindings like PUT /bindings (404 source_not_found for a source you " +
        `do not own, and then nothing changes). ${notFound}`
    )),
    HttpApiEndpoint.delete("remove", "/:agent_id", {
      params: AgentParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(described(
      "Delete an agent",
      "204. Deletes the agent's bindings, conversations, messages and runs; the bound sources and their " +
        `documents are never touched. ${notFound}`
    )),
    HttpApiEndpoint.get("getBindings", "/:agent_id/bindings", {
      params: AgentParams,
      success: Bindings,
      error: NotFound
    }).annotateMerge(described(
      "The sources an agent may search",
      `Sorted ids. Deleting a source removes it from every agent's bindings. ${notFound}`
    )),
    HttpApiEndpoint.put("putBindings", "/:agent_id/bindings", {
      params: AgentParams,
      payload: Bindings,
      success: Bindings,
      error: NotFound
    }).annotateMerge(described(
      "Replace the sources an agent may search",
      "The new set replaces the old one atomically; repeated ids count once; [] unbinds everything. A source " +
        `you do not own is 404 source_not_found naming it, and the bindings stay as they were. ${notFound}`
    )),
    HttpApiEndpoint.post("createConversation", "/:agent_id/conversations", {
      params: AgentParams,
      payload: ConversationCreate,
      success: ConversationOut.pipe(HttpApiSchema.status(201)),
      error: NotFound
    }).annotateMerge(described(
      "Start a conversation with an agent",
      `title is optional (1–200 characters, trimmed; null or absent: untitled). ${notFound}`
    )),
    HttpApiEndpoint.get("listConversations", "/:agent_id/conversations", {
      params: AgentParams,
      query: PageQuery,
      success: Page(ConversationOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(described(
      "An agent's conversations, most recently active first",
      `Ordered by updated_at (the time of the last message). ${notFound}`
    )),
    HttpApiEndpoint.get("getConversation", "/:agent_id/conversations/:conversation_id", {
      params: ConversationParams,
      success: ConversationOut,
      error: NotFound
    }).annotateMerge(described("A conversation with its message count", conversationNotFound)),
    HttpApiEndpoint.delete("removeConversation", "/:agent_id/conversations/:conversation_id", {
      params: ConversationParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(described(
      "Delete a conversation",
      `204. Deletes its messages; its runs stay readable without the conversation. ${conversationNotFound}`
    )),
    HttpApiEndpoint.get("listMessages", "/:agent_id/conversations/:conversation_id/messages", {
      params: ConversationParams,
      query: PageQuery,
      success: Page(MessageOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(described(
      "A conversation's messages, oldest first",
      "Each message has its role (user or assistant), content, the run that produced or answered it, and for " +
        `answers the citations [{n, chunk_id, document_id, source_id, title, quote}]. ${conversationNotFound}`
    ))
  )
  .middleware(Authentication)
  .prefix("/agents")
  .annotateMerge(OpenApi.annotations({
    title: "Agents",
    description: "Assistants with instructions, model and retrieval settings, the sources they may search, and " +
      "their conversations"
  }))
{}
