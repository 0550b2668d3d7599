import { HttpApiMiddleware } from "effect/http-api"
import { InternalError, ValidationFailed } from "./Errors.ts"

/** Turns request decoding failures into our 422 body (Effect's default is an empty 400). */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()("engram/RequestValidation", {
  error: [ValidationFailed, InternalError]
}) {}
