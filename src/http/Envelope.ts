import { ByteSize, Clock, Effect, Layer, Metric, Option, Schema, type Types } from "effect"
import {
  HttpIncomingMessage,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse,
  Multipart
} from "effect/http"
import { randomUUID } from "node:crypto"
import { CurrentRequestId, ErrorEnvelope } from "../api/Errors.ts"
import { EngramConfig } from "../config.ts"
import { httpRequests, routeOf } from "../observability/Metrics.ts"

const codeForStatus: Record<number, readonly [code: string, message: string]> = {
  400: ["bad_request", "The request is malformed"],
  401: ["unauthorized", "Authentication is required"],
  403: ["forbidden", "Not allowed"],
  404: ["not_found", "No such endpoint"],
  405: ["method_not_allowed", "This endpoint does not accept the method"],
  413: ["payload_too_large", "The request body exceeds the configured limit"],
  415: ["unsupported_media_type", "Send the body as application/json"],
  499: ["client_closed_request", "The client closed the request"],
  503: ["service_unavailable", "The service is shutting down or not ready"]
}

const isEnvelope = Schema.is(ErrorEnvelope)

const errorResponse = (status: number, requestId: string, override?: string) => {
  const [code, message] = codeForStatus[status] ?? (status >= 500
    ? ["internal_error", "Internal server error"]
    : [`http_${status}`, "The request failed"])
  return HttpServerResponse.jsonUnsafe(
    { error: { code, message: override ?? message, request_id: requestId } },
    { status }
  )
}

const invalidUrlEncoding = (requestId: string) =>
  HttpServerResponse.jsonUnsafe({
    error: {
      code: "invalid_url_encoding",
      message: "The URL's path or query has percent-encoded bytes that are not UTF-8 text",
      request_id: requestId
    }
  }, { status: 400 })

/** Any error response not already in our `{"error": …}` shape (router, body parser, defects) is rewritten into it. */
const normalizeError = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  if (response.status < 400) return response
  const body = response.body
  if (body._tag === "Uint8Array" && body.contentType.includes("json")) {
    try {
      if (isEnvelope(JSON.parse(new TextDecoder().decode(body.body)))) return response
    } catch {
      // not JSON after all: rewritten below
    }
  }
  const { "content-type": _type, "content-length": _length, ...headers } = response.headers
  return HttpServerResponse.setHeaders(errorResponse(response.status, requestId), headers)
}

/** The OpenAI-compatible paths answer errors in OpenAI's shape, and invalid requests with 400 as OpenAI does. */
const isCompatPath = (url: string) => url.startsWith("/api/v1/engram/")

/** The MCP endpoint answers protocol errors as JSON-RPC, which its clients read: those are left as they are. */
const isMcpPath = (url: string) => url === "/api/v1/mcp" || url.startsWith("/api/v1/mcp/") || url.startsWith("/api/v1/mcp?")

const openAiType = (status: number) =>
  status === 401
    ? "authentication_error"
    : status === 403
    ? "permission_error"
    : status === 429
    ? "rate_limit_error"
    : status >= 500
    ? "server_error"
    : "invalid_request_error"

/** Rewrites an error response already in our envelope into `{"error": {"message", "type", "param", "code"}}`. */
const toOpenAiError = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400 || response.body._tag !== "Uint8Array") return response
  const envelope = JSON.parse(new TextDecoder().decode(response.body.body)) as {
    error: { code: string; message: string; issues?: ReadonlyArray<{ path: string; message: string }> }
  }
  const status = response.status === 422 ? 400 : response.status
  const issue = envelope.error.issues?.[0]
  const { "content-type": _type, "content-length": _length, ...headers } = response.headers
  return HttpServerResponse.setHeaders(
    HttpServerResponse.jsonUnsafe({
      error: {
        message: envelope.error.message,
        type: openAiType(status),
        param: issue === undefined ? null : issue.path.replace(/^body\./, ""),
        code: envelope.error.code
      }
    }, { status }),
    headers
  )
}

const bearerChallenge = (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 401 && response.headers["www-authenticate"] === undefined
    ? HttpServerResponse.setHeader(response, "www-authenticate", 'Bearer realm="engram"')
    : response

const decodeUriComponent = Option.liftThrowable(decodeURIComponent)

/**
 * Path and query parameters are percent-encoded UTF-8. Bytes that are not (an encoded lone surrogate, %FF) would be
 * read as 404 by the router or turned into U+FFFD by the query parser, so the request is refused as sent.
 */
const hasUtf8Encoding = (url: string) => Option.isSome(decodeUriComponent(url.replaceAll("+", " ")))

const validRequestId = (value: string | undefined) =>
  value !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined

/**
 * Wraps every request: assigns the request id (a sane incoming x-request-id is kept), enforces the body size
 * limit, turns failures and defects into the error envelope without internal detail, logs one line per request.
 */
export const RequestEnvelope = Layer.unwrap(Effect.gen(function*() {
  const { maxBodyBytes, maxUploadBytes } = yield* EngramConfig

  const serve = Effect.fnUntraced(function*(
    httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>,
    request: HttpServerRequest.HttpServerRequest,
    requestId: string
  ) {
    const started = yield* Clock.currentTimeMillis
    const isUpload = (request.headers["content-type"] ?? "").startsWith("multipart/form-data")
    const limit = isUpload ? maxUploadBytes : maxBodyBytes
    const declaredLength = Number(request.headers["content-length"] ?? 0)
    const response = declaredLength > limit
      ? errorResponse(413, requestId, `The request body exceeds the limit of ${limit} bytes`)
      : !hasUtf8Encoding(request.url)
      ? invalidUrlEncoding(requestId)
      : yield* httpEffect.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit)),
        Effect.provideService(Multipart.MaxFileSize, ByteSize.bytes(limit)),
        Effect.catchCause((cause) =>
          HttpServerError.causeResponse(cause).pipe(
            Effect.tap(([response]) =>
              response.status >= 500 && response.status !== 503
                ? Effect.logError("request failed", cause)
                : Effect.void
            ),
            Effect.map(([response]) => response)
          )
        )
      )
    const finished = yield* Clock.currentTimeMillis
    yield* Metric.update(
      Metric.withAttributes(httpRequests, {
        method: request.method,
        // A 404 path is whatever a client sent: one label for all of them keeps the series few.
        route: response.status === 404 ? "(not found)" : routeOf(request.url),
        status: String(response.status)
      }),
      1
    )
    yield* Effect.logInfo("request").pipe(
      Effect.annotateLogs({
        method: request.method,
        path: request.url.split("?")[0],
        status: response.status,
        duration_ms: finished - started
      })
    )
    const normalized = isMcpPath(request.url) ? response : normalizeError(response, requestId)
    return (isCompatPath(request.url) ? toOpenAiError(normalized) : normalized).pipe(
      bearerChallenge,
      HttpServerResponse.setHeader("x-request-id", requestId),
      HttpServerResponse.setHeader("x-content-type-options", "nosniff")
    )
  })

  return HttpRouter.middleware((
    httpEffect
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const requestId = validRequestId(request.headers["x-request-id"]) ?? randomUUID()
      yield* Effect.annotateCurrentSpan("engram.request_id", requestId)
      return yield* serve(httpEffect, request, requestId).pipe(
        Effect.annotateLogs("request_id", requestId),
        Effect.provideService(CurrentRequestId, requestId)
      )
    }), { global: true })
}))
