import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { JobOut } from "../domain/Job.ts"
import { IdText } from "../domain/Text.ts"
import { NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

export class JobsApi extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.get("get", "/:job_id", {
      params: { job_id: IdText },
      success: JobOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "A background job",
      description: "status: queued, running, paused, succeeded, failed or cancelled; progress counts chunks. " +
        "Failures carry error {code, message, stage}; transient ones are retried with backoff first."
    }))
  )
  .middleware(Authentication)
  .prefix("/jobs")
  .annotateMerge(OpenApi.annotations({ title: "Jobs", description: "Durable background work" }))
{}
