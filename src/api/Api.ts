import { HttpApi, OpenApi } from "effect/http-api"
import { AgentsApi } from "./Agents.ts"
import { AuthApi } from "./Auth.ts"
import { CompatApi } from "./Compat.ts"
import { DocumentsApi } from "./Documents.ts"
import { ExplorationsApi } from "./Explorations.ts"
import { GraphApi } from "./Graph.ts"
import { JobsApi } from "./Jobs.ts"
import { McpConfigApi } from "./Mcp.ts"
import { SearchApi } from "./Search.ts"
import { SourcesApi } from "./Sources.ts"
import { RunsApi } from "./Runs.ts"
import { RequestValidation } from "./Validation.ts"
import { engramVersion } from "../version.ts"
import { SystemApi } from "./System.ts"
import { TimelineApi } from "./Timeline.ts"
import { UniverseApi } from "./Universe.ts"

export class Api extends HttpApi.make("engram")
  .add(SystemApi)
  .add(AuthApi)
  .add(SourcesApi)
  .add(McpConfigApi)
  .add(DocumentsApi)
  .add(JobsApi)
  .add(SearchApi)
  .add(GraphApi)
  .add(TimelineApi)
  .add(ExplorationsApi)
  .add(UniverseApi)
  .add(AgentsApi)
  .add(RunsApi)
  .add(CompatApi)
  .prefix("/api/v1")
  .middleware(RequestValidation)
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "error", errors: "all" })
  .annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error", errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "Engram API",
    version: engramVersion,
    description: "Self-hosted knowledge retrieval. Every endpoint except login, register, health, ready and " +
      "capabilities needs `Authorization: Bearer <access_token>`. Errors are `{\"error\": {\"code\", \"message\", " +
      "\"request_id\"}}`; validation errors (422) add `issues: [{path, message}]`. Every response carries x-request-id."
  }))
{}
