import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ChatCompletion, ChatCompletionRequest, ModelList } from "../domain/ChatCompletion.ts"
import { IdText } from "../domain/Text.ts"
import { BadGateway, BadRequest, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const AgentParams = Schema.Struct({ agent_id: IdText })

/**
 * OpenAI Chat Completions over an agent: point an OpenAI SDK at baseURL = {host}/api/v1/engram/{agent_id}.
 * Errors on these paths use OpenAI's shape, {"error": {"message", "type", "code", "param"}} (the request
 * envelope rewrites them), and invalid requests are 400 as OpenAI answers them.
 */
export class CompatApi extends HttpApiGroup.make("compat")
  .add(
    HttpApiEndpoint.post("chatCompletions", "/engram/:agent_id/chat/completions", {
      params: AgentParams,
      payload: ChatCompletionRequest,
      success: ChatCompletion,
      error: [BadRequest, NotFound, BadGateway]
    }).annotateMerge(OpenApi.annotations({
      summary: "Chat Completions with an agent (OpenAI-compatible)",
      description: "The last user message is the question, earlier messages the history; the agent's " +
        "instructions, bindings and retrieval apply. temperature, max_tokens (or max_completion_tokens) and stop " +
        "go to the language model; model is ignored (the agent decides). stream defaults to false. Errors are in " +
        "OpenAI's shape. A client that closes the stream cancels the run."
    })),
    HttpApiEndpoint.get("listModels", "/engram/:agent_id/models", {
      params: AgentParams,
      success: ModelList,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "The agent as the one model (OpenAI-compatible)",
      description: "Lists the agent with its id as the model id, so SDK clients configured for the agent work unchanged."
    }))
  )
  .middleware(Authentication)
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "ignore", errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "OpenAI-compatible",
    description: "baseURL = {host}/api/v1/engram/{agent_id} with the same bearer token; errors in OpenAI's shape"
  }))
{}
