import { Effect } from "effect"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

export interface RequestOptions {
  readonly method?: string
  readonly token?: string
  readonly json?: unknown
  readonly body?: string
  readonly headers?: Record<string, string>
}

/** A real HTTP request with the platform fetch; the body is parsed when it is JSON. */
export const request = (baseUrl: string, path: string, options: RequestOptions = {}) =>
  Effect.promise(async (): Promise<Reply> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    let body = options.body
    if (options.json !== undefined) {
      body = JSON.stringify(options.json)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(baseUrl + path, {
      method: options.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body
    })
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: response.status, headers: response.headers, body: parsed, text }
  })

export const login = (baseUrl: string, name: string, password?: string) =>
  Effect.map(
    request(baseUrl, "/api/v1/auth/login", { json: password === undefined ? { name } : { name, password } }),
    (reply) => {
      if (reply.status !== 200) throw new Error(`login failed: ${reply.status} ${reply.text}`)
      return reply.body.access_token as string
    }
  )

/** Polls /system/ready until the node reports "ready" (the embedding model has loaded), at most 60 s. */
export const waitUntilReady = (baseUrl: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const response = await fetch(`${baseUrl}/api/v1/system/ready`)
      const body = await response.json() as { status: string }
      if (response.status === 200 && body.status === "ready") return body as any
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error("the server did not become ready")
  })
