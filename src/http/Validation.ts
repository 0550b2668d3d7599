import { Cause, Effect, ErrorReporter, Layer, SchemaAST, SchemaIssue, type Types } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiError, type HttpApiEndpoint } from "effect/http-api"
import { InternalError, UnsupportedMediaType, ValidationFailed, httpError } from "../api/Errors.ts"
import { RequestValidation } from "../api/Validation.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotName = { Params: "path", Headers: "headers", Query: "query", Payload: "body" } as const

const segment = (key: PropertyKey | { readonly key: PropertyKey }) => {
  const value = typeof key === "object" ? key.key : key
  return typeof value === "number" ? `[${value}]` : `.${String(value)}`
}

/** Request decoding failures are the client's (422, every issue listed); response encoding failures are ours (500). */
const transformSchemaError = (error: HttpApiError.HttpApiSchemaError) => {
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
}

/** An endpoint without query parameters refuses any, as every query schema refuses unknown ones. */
const refuseQueryParameters = Effect.flatMap(HttpServerRequest.ParsedSearchParams, (query) => {
  const names = Object.keys(query)
  return names.length === 0
    ? Effect.void
    : Effect.fail(ValidationFailed.create(names.map((name) => ({
      path: `query.${name}`,
      message: "Expected no query parameters: this endpoint takes none"
    }))))
})

/** What to send instead, from the endpoint's own payload: its description when it has one, else its content types. */
const expectedBody = (endpoint: HttpApiEndpoint.Top) =>
  [...endpoint.payload].map(([contentType, { schemas }]) => {
    const description = SchemaAST.resolveDescription(schemas[0].ast)
    return description?.startsWith(contentType) ? description : contentType
  }).join(", or ")

/**
 * The router answers a body of another content type with a bare 415; it is given our error body, telling the
 * client what this endpoint takes (an upload is told multipart/form-data and its part names, not JSON).
 */
const explainUnsupportedMediaType = (endpoint: HttpApiEndpoint.Top) =>
(response: HttpServerResponse.HttpServerResponse) =>
  response.status === 415
    ? Effect.fail(httpError(UnsupportedMediaType, "unsupported_media_type", `Send the body as ${expectedBody(endpoint)}`))
    : Effect.succeed(response)

export const RequestValidationLive = Layer.succeed(RequestValidation, (httpEffect, { endpoint }) =>
  Effect.catch(
    (endpoint.query === undefined ? Effect.andThen(refuseQueryParameters, httpEffect) : httpEffect).pipe(
      Effect.flatMap(explainUnsupportedMediaType(endpoint))
    ),
    (error): Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      Types.unhandled | InternalError | ValidationFailed | UnsupportedMediaType
    > =>
      HttpApiError.HttpApiSchemaError.is(error) ? transformSchemaError(error) : Effect.fail(error)
  ))
