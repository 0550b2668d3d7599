import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** A span as an OTLP/HTTP JSON export carries it, with its attributes decoded to plain values. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  /** 1 internal, 2 server, 3 client. */
  readonly kind?: number
  readonly startTimeUnixNano: string
  readonly attributes: Record<string, unknown>
  readonly status?: { readonly code?: number }
}

const valueOf = (v: Record<string, any>): unknown =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.boolValue ?? v.doubleValue ??
    (v.arrayValue === undefined ? undefined : (v.arrayValue.values ?? []).map(valueOf))

/** A real OTLP/HTTP (JSON) trace receiver: every span posted to /v1/traces, decoded, and the raw bodies. */
export const otlpReceiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; spans: Array<ReceivedSpan>; bodies: Array<string>; close: () => Promise<void> }>(
      (resolve) => {
        const spans: Array<ReceivedSpan> = []
        const bodies: Array<string> = []
        const server = createServer((req, res) => {
          let body = ""
          req.on("data", (chunk) => (body += chunk))
          req.on("end", () => {
            if (req.url === "/v1/traces") {
              bodies.push(body)
              const decoded = JSON.parse(body) as any
              for (const resource of decoded.resourceSpans ?? []) {
                for (const scope of resource.scopeSpans ?? []) {
                  for (const span of scope.spans ?? []) {
                    spans.push({
                      ...span,
                      attributes: Object.fromEntries((span.attributes ?? []).map((a: any) => [a.key, valueOf(a.value)]))
                    })
                  }
                }
              }
            }
            res.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({
            url: `http://127.0.0.1:${port}`,
            spans,
            bodies,
            close: () => new Promise((done) => server.close(() => done()))
          })
        })
      }
    )
  ),
  (received) => Effect.promise(() => received.close())
)

/** Polls `probe` until it returns something (spans arrive in batches), for at most a minute. */
export const waitFor = <A>(probe: () => A | undefined, what: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const found = probe()
      if (found !== undefined) return found
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`no ${what} arrived`)
  })

/** The names of a span's ancestors within the spans received, nearest first. */
export const ancestorsOf = (spans: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan): Array<ReceivedSpan> => {
  const parent = span.parentSpanId === undefined || span.parentSpanId === ""
    ? undefined
    : spans.find((one) => one.spanId === span.parentSpanId)
  return parent === undefined ? [] : [parent, ...ancestorsOf(spans, parent)]
}
