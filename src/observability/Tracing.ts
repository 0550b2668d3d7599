import { Effect, Layer, Option, Tracer } from "effect"
import { engramVersion } from "../version.ts"

// OpenTelemetry's resource attribute names, written out (see ./GenAi.ts for why; test/observability/semconv.test.ts).
export const ATTR_SERVICE_NAME = "service.name"
export const ATTR_SERVICE_VERSION = "service.version"

/**
 * Export is on when the standard OpenTelemetry variables ask for it: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), not disabled by OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none. The OpenTelemetry SDK reads the rest itself: headers, sampler, batch settings.
 */
export const tracingRequested = (env: NodeJS.ProcessEnv = process.env) =>
  (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? "") !== "" &&
  env.OTEL_SDK_DISABLED?.toLowerCase() !== "true" &&
  env.OTEL_TRACES_EXPORTER?.toLowerCase() !== "none"

/** The OpenTelemetry SDK, loaded only when traces are exported (it costs about 0.2 s of start-up). */
const loadSdk = Effect.promise(() =>
  Promise.all([
    import("@effect/opentelemetry/OtelTracer"),
    import("@effect/opentelemetry/Resource"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/sdk-trace-node")
  ])
)

/**
 * Traces over OTLP/HTTP through @effect/opentelemetry when requested; otherwise nothing is loaded or installed and
 * spans stay in-process (no export, no SDK). The service name is OTEL_SERVICE_NAME, else "engram".
 */
export const TracingLive = Layer.unwrap(Effect.gen(function*() {
  if (!tracingRequested()) return Layer.empty
  const [OtelTracer, Resource, { OTLPTraceExporter }, { BatchSpanProcessor }, { NodeTracerProvider }] = yield* loadSdk
  const Provider = Layer.effect(
    OtelTracer.OtelTracerProvider,
    Effect.gen(function*() {
      const resource = yield* Resource.Resource
      return yield* Effect.acquireRelease(
        Effect.sync(() =>
          new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
        ),
        // What is buffered is sent before the process ends, for at most 5 s.
        (provider) =>
          Effect.promise(() => provider.forceFlush().finally(() => provider.shutdown())).pipe(
            Effect.ignore,
            Effect.timeoutOption("5 seconds")
          )
      )
    })
  )
  // OtelTracer.make's tracer also makes every step of a traced fiber run inside an OpenTelemetry context, for
  // OpenTelemetry instrumentations to see the span; Engram registers none (nor a context manager), so only its
  // span constructor is kept: those context copies were the largest item of the exporting cost in a CPU profile.
  const EffectTracer = Layer.effect(
    Tracer.Tracer,
    Effect.map(OtelTracer.make, (tracer) => Tracer.make({ span: (options) => tracer.span(options) }))
  )
  return EffectTracer.pipe(
    Layer.provideMerge(OtelTracer.layerTracer),
    Layer.provide(Provider),
    Layer.provide(Resource.layerFromEnv({
      ...(process.env.OTEL_SERVICE_NAME === undefined ? { [ATTR_SERVICE_NAME]: "engram" } : {}),
      [ATTR_SERVICE_VERSION]: engramVersion
    }))
  )
}))

/** The current span as a W3C traceparent (`00-<trace>-<span>-<flags>`), to hand a trace to a later job. */
export const currentTraceParent: Effect.Effect<string | null> = Effect.currentSpan.pipe(
  Effect.map((span) => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`),
  Effect.orElseSucceed(() => null)
)

/** The span a traceparent names, as a parent for work that continues that trace. */
export const parentFromTraceParent = (traceParent: string | null): Option.Option<Tracer.ExternalSpan> => {
  const match = traceParent === null ? null : /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceParent)
  return match === null
    ? Option.none()
    : Option.some(Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: match[3] === "01" }))
}
