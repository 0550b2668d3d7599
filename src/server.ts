import { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { Api } from "./api/Api.ts"
import { AuthHandlers } from "./http/Auth.ts"
import { CorsLive } from "./http/Cors.ts"
import { RequestEnvelope } from "./http/Envelope.ts"
import { SystemHandlers } from "./http/System.ts"
import { RequestValidationLive } from "./http/Validation.ts"
import { Auth } from "./services/Auth.ts"
import { Db } from "./services/Db.ts"
import { Settings } from "./services/Settings.ts"
import { Users } from "./services/Users.ts"

/** Services shared by the HTTP handlers (and, later, the workers). */
export const AppServices = Layer.mergeAll(Auth.layer, Settings.layer).pipe(
  Layer.provide(Users.layer),
  Layer.provideMerge(Db.layer)
)

const Routes = Layer.mergeAll(
  HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
    Layer.provide(Layer.mergeAll(SystemHandlers, AuthHandlers).pipe(Layer.provideMerge(RequestValidationLive)))
  ),
  HttpApiScalar.layer(Api, { path: "/docs" }),
  HttpRouter.add("GET", "/", HttpServerResponse.redirect("/docs")),
  RequestEnvelope,
  CorsLive
)

/** The whole HTTP service; needs an HttpServer and EngramConfig. */
export const ServerLive = HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(AppServices)
)
