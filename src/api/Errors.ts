import { Context, Fiber, Schema } from "effect"

/** The id of the request being served; set by the request envelope middleware, read by every error. */
export const CurrentRequestId = Context.Reference<string>("engram/CurrentRequestId", {
  defaultValue: () => "none"
})

const currentRequestId = () => Fiber.getCurrent()?.getRef(CurrentRequestId) ?? "none"

export const ValidationIssue = Schema.Struct({
  path: Schema.String.annotate({ description: "Where the value is, e.g. body.name or query.limit" }),
  message: Schema.String
}).annotate({ identifier: "ValidationIssue" })
export type ValidationIssue = typeof ValidationIssue.Type

const ErrorDetail = Schema.Struct({
  code: Schema.String.annotate({ description: "Stable machine-readable code, e.g. not_found" }),
  message: Schema.String.annotate({ description: "Human-readable explanation" }),
  request_id: Schema.String.annotate({ description: "The x-request-id of the request; quote it when reporting a problem" })
})

const ValidationDetail = Schema.Struct({
  ...ErrorDetail.fields,
  issues: Schema.Array(ValidationIssue)
})

type ErrorDetail = typeof ErrorDetail.Type

/** An error class answering `status` with the `{"error": {...}}` envelope. Build instances with `httpError`. */
const apiError = <Self>(identifier: string, status: number, description: string) =>
  Schema.Error<Self>(identifier)({ error: ErrorDetail }, { httpApiStatus: status, description })

/** An instance of one of the error classes below, carrying the current request's id. */
export const httpError = <T>(
  ErrorClass: new(props: { readonly error: ErrorDetail }) => T,
  code: string,
  message: string
): T => new ErrorClass({ error: { code, message, request_id: currentRequestId() } })

export class BadRequest extends apiError<BadRequest>("BadRequest", 400, "The request cannot be served as sent") {}

export class Unauthorized extends apiError<Unauthorized>(
  "Unauthorized",
  401,
  "Missing, malformed, expired or wrongly signed bearer token, or wrong credentials"
) {}

export class Forbidden extends apiError<Forbidden>("Forbidden", 403, "This deployment does not allow the action") {}

export class NotFound extends apiError<NotFound>("NotFound", 404, "No such resource for the caller") {}

export class Conflict extends apiError<Conflict>("Conflict", 409, "The request conflicts with the current state") {}

export class PayloadTooLarge extends apiError<PayloadTooLarge>(
  "PayloadTooLarge",
  413,
  "The request body exceeds the configured limit"
) {}

export class UnsupportedMediaType extends apiError<UnsupportedMediaType>(
  "UnsupportedMediaType",
  415,
  "The request body's content type is not accepted here"
) {}

export class ValidationFailed extends Schema.Error<ValidationFailed>("ValidationFailed")(
  { error: ValidationDetail },
  { httpApiStatus: 422, description: "The body, path or query failed validation; every issue is listed" }
) {
  static create(issues: ReadonlyArray<ValidationIssue>) {
    const message = issues.length === 1
      ? `Invalid request: ${issues[0]!.path}: ${issues[0]!.message}`
      : `Invalid request: ${issues.length} problems`
    return new ValidationFailed({
      error: { code: "validation_failed", message, issues, request_id: currentRequestId() }
    })
  }
}

export class BadGateway extends apiError<BadGateway>(
  "BadGateway",
  502,
  "An upstream service the request needs (the language model) failed"
) {}

export class ServiceUnavailable extends apiError<ServiceUnavailable>(
  "ServiceUnavailable",
  503,
  "A dependency the request needs is not available"
) {}

export class NotImplemented extends apiError<NotImplemented>(
  "NotImplemented",
  501,
  "This release does not implement the action yet"
) {}

export class InternalError extends apiError<InternalError>(
  "InternalError",
  500,
  "Unexpected failure; details are only in the server log under the request id"
) {}

/** The body every error response has; used to render errors raised outside HttpApi handlers. */
export const ErrorEnvelope = Schema.Struct({ error: ErrorDetail })
