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

/** The fields every error class shares: a `{"error": {...}}` envelope with an HTTP status. */
const apiError = <Self>(identifier: string, status: number, description: string) =>
  Schema.Error<Self>(identifier)({ error: ErrorDetail }, { httpApiStatus: status, description })


export class BadRequest extends apiError<BadRequest>("BadRequest", 400, "The request cannot be served as sent") {
  static create(code: string, message: string) {
    return new BadRequest({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class Unauthorized extends apiError<Unauthorized>(
  "Unauthorized",
  401,
  "Missing, malformed, expired or wrongly signed bearer token, or wrong credentials"
) {
  static create(code: string, message: string) {
    return new Unauthorized({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class Forbidden extends apiError<Forbidden>("Forbidden", 403, "This deployment does not allow the action") {
  static create(code: string, message: string) {
    return new Forbidden({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class NotFound extends apiError<NotFound>("NotFound", 404, "No such resource for the caller") {
  static create(code: string, message: string) {
    return new NotFound({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class Conflict extends apiError<Conflict>("Conflict", 409, "The request conflicts with the current state") {
  static create(code: string, message: string) {
    return new Conflict({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class PayloadTooLarge extends apiError<PayloadTooLarge>(
  "PayloadTooLarge",
  413,
  "The request body exceeds the configured limit"
) {
  static create(code: string, message: string) {
    return new PayloadTooLarge({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class UnsupportedMediaType extends apiError<UnsupportedMediaType>(
  "UnsupportedMediaType",
  415,
  "The request body's content type is not accepted here"
) {
  static create(code: string, message: string) {
    return new UnsupportedMediaType({ error: { code, message, request_id: currentRequestId() } })
  }
}

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

export class ServiceUnavailable extends apiError<ServiceUnavailable>(
  "ServiceUnavailable",
  503,
  "A dependency the request needs is not available"
) {
  static create(code: string, message: string) {
    return new ServiceUnavailable({ error: { code, message, request_id: currentRequestId() } })
  }
}

export class InternalError extends apiError<InternalError>(
  "InternalError",
  500,
  "Unexpected failure; details are only in the server log under the request id"
) {
  static create() {
    return new InternalError({
      error: { code: "internal_error", message: "Internal server error", request_id: currentRequestId() }
    })
  }
}

/** The body every error response has; used to render errors raised outside HttpApi handlers. */
export const ErrorEnvelope = Schema.Struct({ error: ErrorDetail })
