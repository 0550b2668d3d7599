import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, InternalError, PayloadTooLarge, UnsupportedMediaType, ValidationFailed } from "./Errors.ts"

/**
 * Turns request decoding failures into our 422 body (Effect's default is an empty 400). It also declares the
 * errors any endpoint can answer with (400, 413, 415 and 500 come from the request envelope), so OpenAPI lists them.
 */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()("engram/RequestValidation", {
  error: [BadRequest, ValidationFailed, PayloadTooLarge, UnsupportedMediaType, InternalError]
}) {}
