import { Effect, ErrorReporter, Cause, SchemaIssue } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { InternalError, ValidationFailed, httpError } from "../api/Errors.ts"
import { RequestValidation } from "../api/Validation.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotName = { Params: "path", Headers: "headers", Query: "query", Payload: "body" } as const

const segment = (key: PropertyKey | { readonly key: PropertyKey }) => {
  const value = typeof key === "object" ? key.key : key
  return typeof value === "number" ? `[${value}]` : `.${String(value)}`
}

/** Request decoding failures are the client's (422, every issue listed); response encoding failures are ours (500). */
export const RequestValidationLive = HttpApiMiddleware.layerSchemaErrorTransform(RequestValidation, (error) => {
  if (error.kind === "Body" || error.kind === "ResponseHeaders") {
    return ErrorReporter.report(Cause.fail(error)).pipe(
      Effect.andThen(Effect.logError("response encoding failed", error.cause)),
      Effect.andThen(Effect.fail(httpError(InternalError, "internal_error", "Internal server error")))
    )
  }
  const slot = slotName[error.kind]
  const issues = formatIssues(error.cause.issue).issues.map((issue) => ({
    path: slot + (issue.path ?? []).map(segment).join(""),
    message: issue.message
  }))
  return Effect.fail(ValidationFailed.create(issues))
})
