import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { httpError, NotFound } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { Jobs, toJobOut } from "../stores/Jobs.ts"
import { AuthenticationLive } from "./Authentication.ts"

export const JobsHandlers = HttpApiBuilder.group(
  Api,
  "jobs",
  Effect.fn(function*(handlers) {
    const jobs = yield* Jobs
    return handlers.handle("get", ({ params }) =>
      Effect.flatMap(CurrentUser, (user) => jobs.findForOwner(params.job_id, user.id)).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(httpError(NotFound, "job_not_found", "No such job")),
          onSome: (row) => Effect.succeed(toJobOut(row))
        }))
      ))
  })
).pipe(Layer.provide(AuthenticationLive))
