import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** One message of a Chat Completions request; `content` is a string or, in the newer form, a list of parts. */
export interface ChatMessage {
  readonly role: string
  readonly content: string | null | ReadonlyArray<{ readonly type: string; readonly text?: string }>
}

/** The request body of POST /v1/chat/completions, as parsed (fields the stand-in does not use are kept too). */
export interface ChatRequestBody {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly stream?: boolean | null
  readonly stream_options?: { readonly include_usage?: boolean } | null
  readonly temperature?: number | null
  readonly max_tokens?: number | null
  readonly max_completion_tokens?: number | null
  readonly stop?: string | ReadonlyArray<string> | null
  readonly [field: string]: unknown
}

export interface ChatServerOptions {
  /** Produces the reply text for a request (default: a fixed sentence that mentions the last user message). */
  readonly reply?: (request: ChatRequestBody) => string
  /** The first `times` chat completion requests answer `status` (OpenAI's error shape), e.g. { status: 503, times: 2 }. */
  readonly failFirst?: { readonly status: number; readonly times: number }
  /** Milliseconds to wait between streamed chunks (for cancellation tests); default 0. */
  readonly chunkDelayMs?: number
  /** Required bearer key; when set, a wrong or missing key gets 401 with OpenAI's error shape. */
  readonly apiKey?: string
  /** The model GET /v1/models lists (default "stand-in-chat"); chat requests may name any model. */
  readonly model?: string
  /** Streams stop after this many content pieces until `until` resolves (a reply certainly in progress). */
  readonly holdAfter?: { readonly pieces: number; readonly until: Promise<unknown> }
}

export interface ChatServer {
  /** Base URL ending in /v1, as given to an OpenAI client's baseURL. */
  readonly url: string
  /** Every chat completion request body that parsed as JSON, in arrival order (failed and unauthorised ones too). */
  readonly requests: Array<ChatRequestBody>
  /** Streams whose client disconnected before the end. */
  readonly aborted: number
  readonly close: () => Promise<void>
}

/** The text of a message, with list-of-parts content joined. */
export const messageText = (message: ChatMessage): string =>
  typeof message.content === "string"
    ? message.content
    : (message.content ?? []).map((part) => part.text ?? "").join("")

/** The stand-in's token count: whitespace-separated words. */
export const countTokens = (text: string): number => text.split(/\s+/).filter((word) => word !== "").length

export const defaultReply = (request: ChatRequestBody): string => {
  const lastUser = [...request.messages].reverse().find((message) => message.role === "user")
  return `This is a stand-in reply to: ${lastUser === undefined ? "(no user message)" : messageText(lastUser)}`
}

/** Cut `text` before the first stop sequence, then to at most `maxTokens` words. */
const finish = (text: string, request: ChatRequestBody): { content: string; finishReason: "stop" | "length" } => {
  const stops = request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop
  let content = text
  for (const stop of stops) {
    const at = stop === "" ? -1 : content.indexOf(stop)
    if (at >= 0) content = content.slice(0, at)
  }
  const maxTokens = request.max_completion_tokens ?? request.max_tokens
  if (maxTokens != null && countTokens(content) > maxTokens) {
    const words = content.match(/\s*\S+/g) ?? []
    return { content: words.slice(0, maxTokens).join(""), finishReason: "length" }
  }
  return { content, finishReason: "stop" }
}

/** Pieces of a few characters each (whitespace kept with the following word) that concatenate back to `text`. */
const pieces = (text: string): Array<string> => text.match(/\s*\S{1,6}|\s+$/g) ?? []

const errorTypes: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: "invalid_request_error", code: null, message: "Bad request." },
  401: { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided." },
  403: { type: "invalid_request_error", code: "unsupported_country_region_territory", message: "Forbidden." },
  404: { type: "invalid_request_error", code: null, message: "Not found." },
  408: { type: "server_error", code: null, message: "Request timed out." },
  429: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests." },
  500: { type: "server_error", code: null, message: "The server had an error while processing your request." },
  502: { type: "server_error", code: null, message: "Bad gateway." },
  503: { type: "server_error", code: null, message: "The server is overloaded or not ready yet." },
  504: { type: "server_error", code: null, message: "Gateway timeout." }
}

const sendError = (res: ServerResponse, status: number, message?: string, code?: string | null, param?: string) => {
  const known = errorTypes[status] ?? { type: status >= 500 ? "server_error" : "invalid_request_error", code: null, message: "Error." }
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({
    error: { message: message ?? known.message, type: known.type, param: param ?? null, code: code === undefined ? known.code : code }
  }))
}

const sendJson = (res: ServerResponse, body: unknown) =>
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body))

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** Why a parsed body is not a chat completion request, with the offending parameter; undefined when it is one. */
const invalid = (body: unknown): { message: string; param: string } | undefined => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { message: "The request body must be a JSON object.", param: "body" }
  }
  const record = body as Record<string, unknown>
  if (typeof record.model !== "string" || record.model === "") {
    return { message: "you must provide a model parameter", param: "model" }
  }
  const messages = record.messages
  if (
    !Array.isArray(messages) || messages.length === 0 ||
    !messages.every((m) => typeof m === "object" && m !== null && typeof (m as Record<string, unknown>).role === "string")
  ) {
    return { message: "'messages' must be a non-empty array of messages with a role.", param: "messages" }
  }
  for (const field of ["max_tokens", "max_completion_tokens"]) {
    const value = record[field]
    if (value != null && !(Number.isInteger(value) && (value as number) >= 1)) {
      return { message: `Invalid '${field}': must be an integer of at least 1.`, param: field }
    }
  }
  return undefined
}

/**
 * A stand-in for a remote OpenAI-compatible LLM: POST /v1/chat/completions (plain JSON, or Server-Sent Events when
 * `stream` is true) and GET /v1/models, over real HTTP on 127.0.0.1 with an ephemeral port.
 *
 * Streams are written as separate socket writes (one event each, with `chunkDelayMs` between content pieces), and the
 * first content event is deliberately split across two writes so clients must buffer partial events.
 */
export const startChatServer = async (options: ChatServerOptions = {}): Promise<ChatServer> => {
  const reply = options.reply ?? defaultReply
  const chunkDelayMs = options.chunkDelayMs ?? 0
  const listedModel = options.model ?? "stand-in-chat"
  const requests: Array<ChatRequestBody> = []
  let failuresLeft = options.failFirst?.times ?? 0
  let aborted = 0
  let closing = false

  const stream = async (req: IncomingMessage, res: ServerResponse, request: ChatRequestBody) => {
    const id = `chatcmpl-${randomBytes(12).toString("hex")}`
    const created = Math.floor(Date.now() / 1000)
    const includeUsage = request.stream_options?.include_usage === true
    const { content, finishReason } = finish(reply(request), request)
    const usage = usageOf(request, content)

    let gone = false
    let wake: (() => void) | undefined
    const onClose = () => {
      if (!res.writableEnded) {
        gone = true
        if (!closing) aborted++
        wake?.()
      }
    }
    res.on("close", onClose)
    req.socket.setNoDelay(true)
    /** Waits `ms`, or less when the client goes away meanwhile. */
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        if (gone) return resolve()
        const timer = setTimeout(() => wake?.(), ms)
        wake = () => {
          clearTimeout(timer)
          wake = undefined
          resolve()
        }
      })
    const event = (choices: Array<unknown>, extra: Record<string, unknown> = {}) =>
      Buffer.from(`data: ${JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model: request.model,
        system_fingerprint: "fp_stand_in",
        choices,
        ...(includeUsage ? { usage: null } : {}),
        ...extra
      })}\n\n`, "utf8")
    const choice = (delta: Record<string, unknown>, finish_reason: string | null) => ({
      index: 0,
      delta,
      logprobs: null,
      finish_reason
    })
    const write = (bytes: Buffer | string) => {
      if (!gone) res.write(bytes)
    }

    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "connection": "keep-alive",
      "x-request-id": `req_${randomBytes(8).toString("hex")}`
    })
    res.flushHeaders()
    write(event([choice({ role: "assistant", content: "", refusal: null }, null)]))
    let first = true
    let sent = 0
    for (const piece of pieces(content)) {
      if (options.holdAfter !== undefined && sent++ === options.holdAfter.pieces) await options.holdAfter.until
      await pause(chunkDelayMs)
      if (gone) return
      const bytes = event([choice({ content: piece }, null)])
      if (first) {
        // One event in two TCP writes, cut mid-JSON: clients must buffer until the blank line ends the event.
        first = false
        const cut = Math.floor(bytes.length / 2)
        write(bytes.subarray(0, cut))
        await pause(Math.max(chunkDelayMs, 15))
        if (gone) return
        write(bytes.subarray(cut))
      } else {
        write(bytes)
      }
    }
    await pause(chunkDelayMs)
    if (gone) return
    write(event([choice({}, finishReason)]))
    if (includeUsage) write(event([], { usage }))
    write("data: [DONE]\n\n")
    if (!gone) res.end()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(error))
      else res.destroy()
    })
  })

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req)
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname
    const route = `${req.method} ${path}`
    if (path !== "/v1/chat/completions" && route !== "GET /v1/models") {
      return sendError(res, 404, `Invalid URL (${req.method} ${path})`)
    }
    if (path === "/v1/chat/completions" && req.method !== "POST") {
      return sendError(res, 405, `Invalid method for URL (${req.method} ${path})`)
    }
    let body: unknown
    if (req.method === "POST") {
      try {
        body = JSON.parse(text)
      } catch {
        return sendError(
          res,
          400,
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP " +
            "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
        )
      }
      requests.push(body as ChatRequestBody)
    }
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(
        res,
        401,
        req.headers.authorization === undefined
          ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
          : "Incorrect API key provided.",
        req.headers.authorization === undefined ? null : "invalid_api_key"
      )
    }
    if (route === "GET /v1/models") {
      return sendJson(res, {
        object: "list",
        data: [{ id: listedModel, object: "model", created: 1_700_000_000, owned_by: "stand-in" }]
      })
    }
    if (failuresLeft > 0 && options.failFirst !== undefined) {
      failuresLeft--
      return sendError(res, options.failFirst.status)
    }
    const problem = invalid(body)
    if (problem !== undefined) return sendError(res, 400, problem.message, null, problem.param)
    const request = body as ChatRequestBody
    if (request.stream === true) return stream(req, res, request)
    const { content, finishReason } = finish(reply(request), request)
    res.setHeader("x-request-id", `req_${randomBytes(8).toString("hex")}`)
    sendJson(res, {
      id: `chatcmpl-${randomBytes(12).toString("hex")}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      system_fingerprint: "fp_stand_in",
      choices: [{
        index: 0,
        message: { role: "assistant", content, refusal: null },
        logprobs: null,
        finish_reason: finishReason
      }],
      usage: usageOf(request, content)
    })
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    get aborted() {
      return aborted
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        closing = true
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      })
  }
}

const usageOf = (request: ChatRequestBody, content: string) => {
  const prompt_tokens = request.messages.reduce((sum, message) => sum + countTokens(messageText(message)), 0)
  const completion_tokens = countTokens(content)
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

/** The stand-in as a scoped resource, in the style of `embeddingServer`: closed when the scope closes. */
export const chatServer = (options?: ChatServerOptions) =>
  Effect.acquireRelease(
    Effect.promise(() => startChatServer(options)),
    (server) => Effect.promise(() => server.close())
  )
