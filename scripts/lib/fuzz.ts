/**
 * Sends generated bad inputs to every JSON endpoint of /openapi.json and counts what must never happen: a 5xx, or
 * a response showing internal detail (SQL, a stack trace, a file path, a Node error). Deterministic for a seed.
 */

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
type JsonSchema = { readonly [key: string]: any }

export interface Fixtures {
  readonly token: string
  readonly ids: Readonly<Record<string, string>>
}

export interface FuzzOptions {
  readonly baseUrl: string
  readonly fixtures: Fixtures
  readonly seed: number
  /** At most this many requests in all. */
  readonly maxRequests: number
  /** Stop sending after this many seconds. */
  readonly maxSeconds: number
  /** Requests per endpoint per round; rounds repeat over every endpoint until a budget runs out. */
  readonly perEndpoint?: number
}

export interface Finding {
  readonly request: string
  readonly status: number
  readonly body: string
}

export interface EndpointFigures {
  sent: number
  /** 5xx answers other than the deliberate 503s below. */
  serverErrors: number
  /** 503 with a documented code: a capability this instance does not have (a reranker), not a fault. */
  unavailable: number
  leaks: number
  /** Responses by status code. */
  readonly statuses: Record<number, number>
  readonly findings: Array<Finding>
}

export interface FuzzReport {
  readonly seed: number
  readonly sent: number
  readonly serverErrors: number
  readonly unavailable: number
  readonly leaks: number
  readonly seconds: number
  readonly endpoints: Record<string, EndpointFigures>
}

/** What a response to a client must never contain. */
export const internalDetail: ReadonlyArray<readonly [name: string, pattern: RegExp]> = [
  ["sql", /\b(select|insert|update|delete)\b[^"]{0,200}\b(from|into|set|where)\b/i],
  ["sql", /syntax error at or near|violates [a-z -]*constraint|duplicate key value|invalid byte sequence|relation "|column "|unterminated quoted|\bSQLSTATE\b|pg_catalog/i],
  ["stack", /\bat [\w$.<>[\] ]+ \(?[^()\s]+:\d+:\d+\)?/],
  ["stack", /\bat (async )?[^\s()]+\.(ts|js|mjs|cjs):\d+/],
  ["path", /(\/(home|work|usr|tmp|app|var|root|opt)\/[\w.@-]+\/)|node_modules|[a-z]:\\\\/i],
  ["path", /\.(ts|js|mjs|cjs):\d+/],
  ["node", /\b(Type|Range|Syntax|Reference|URI|Eval|Assertion)?Error: |\bE(CONNREFUSED|ADDRINUSE|ACCES|NOENT|PIPE)\b|\[object Object\]|undefined is not|Cannot read propert/]
]

/** The 503 codes the API documents for a capability the instance lacks (decisions: rerank, dense retrieval). */
export const deliberateUnavailable = ["rerank_unavailable", "dense_unavailable", "no_embedding_model", "not_ready"]

const isDeliberateUnavailable = (status: number, text: string) =>
  status === 503 && deliberateUnavailable.some((code) => text.includes(`"code":"${code}"`))

export const leakIn = (text: string): string | undefined => internalDetail.find(([, pattern]) => pattern.test(text))?.[0]

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
const random = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Operation {
  readonly key: string
  readonly method: string
  readonly path: string
  readonly pathParams: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<{ readonly name: string; readonly schema: JsonSchema }>
  readonly body: JsonSchema | undefined
  readonly multipart: boolean
}

interface Attempt {
  readonly method: string
  readonly url: string
  readonly body?: string
  readonly contentType?: string
}

const resolve = (document: JsonSchema, schema: JsonSchema | undefined): JsonSchema => {
  let current = schema ?? {}
  for (let hops = 0; typeof current.$ref === "string" && hops < 20; hops++) {
    current = current.$ref.replace(/^#\//, "").split("/").reduce((at: JsonSchema, key: string) => at?.[key], document) ?? {}
  }
  return current
}

const operationsOf = (document: JsonSchema): Array<Operation> =>
  Object.entries(document.paths as Record<string, Record<string, JsonSchema>>).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const parameters: Array<JsonSchema> = operation.parameters ?? []
      const content = operation.requestBody?.content ?? {}
      return {
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === "path").map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: content["application/json"]?.schema,
        multipart: content["multipart/form-data"] !== undefined
      }
    })
  )

/**
 * A value the schema probably accepts, so that one mutation at a time reaches the field it targets; each optional
 * property is included or not by chance, so bodies with alternatives (text or messages) are sometimes valid.
 */
const sample = (document: JsonSchema, raw: JsonSchema | undefined, next: () => number, depth = 0): Json => {
  const schema = resolve(document, raw)
  if (depth > 8) return null
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  const alternatives: Array<JsonSchema> | undefined = schema.anyOf ?? schema.oneOf
  if (alternatives !== undefined) {
    const chosen = alternatives.map((a) => resolve(document, a)).find((a) => a.type !== "null") ?? alternatives[0]
    return sample(document, chosen, next, depth + 1)
  }
  const bounds = [schema, ...(schema.allOf ?? [])]
  const minLength = Math.max(0, ...bounds.map((b) => b.minLength ?? 0))
  switch (schema.type) {
    case "string":
      return schema.format === "date-time" ? "2024-05-01T10:00:00Z" : "fuzz".padEnd(Math.max(minLength, 4), "z")
    case "integer":
      return Math.max(1, ...bounds.map((b) => b.minimum ?? 1))
    case "number":
      return Math.max(0, ...bounds.map((b) => b.minimum ?? 0))
    case "boolean":
      return false
    case "array":
      return [sample(document, schema.items, next, depth + 1)]
    case "object":
    default: {
      const properties: Record<string, JsonSchema> = schema.properties ?? {}
      const required = new Set<string>(schema.required ?? [])
      return Object.fromEntries(
        Object.keys(properties)
          .filter((key) => required.has(key) || next() < 0.5)
          .map((key) => [key, sample(document, properties[key], next, depth + 1)])
      )
    }
  }
}

const hugeString = (n: number) => "x".repeat(n)

const deepNesting = (depth: number, open: string, close: string) => open.repeat(depth) + close.repeat(depth)

/** Strings no field should store or choke on. */
const badStrings = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ud83d",
  hugeString(100_000),
  hugeString(2_000_000),
  "😀".repeat(5000),
  "",
  " ",
  "' OR 1=1 --",
  "%00",
  "\u202e\u0007\u001b[31m",
  "${jndi:ldap://x}",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "2024-13-45T99:99:99Z"
]

/** Values of the wrong type, or numbers no column holds. */
const badValues: ReadonlyArray<Json> = [
  null,
  true,
  0,
  -1,
  1e308,
  -1e308,
  2 ** 53 + 1,
  0.5,
  -0,
  [],
  {},
  [null],
  { "": null },
  "1",
  "NaN",
  "Infinity"
]

/** Raw bodies JSON.stringify cannot produce. */
const rawBodies = [
  "",
  " ",
  "{",
  "null",
  "[]",
  "\"text\"",
  "42",
  "{\"a\":1e400}",
  "{\"a\":-1e400}",
  "{\"__proto__\":{\"x\":1}}",
  "{\"constructor\":{\"prototype\":{\"x\":1}}}",
  deepNesting(50_000, "[", "]"),
  deepNesting(5_000, "{\"a\":", "}").replace(/}$/, "1}"),
  "\u0000",
  "{\"a\":\"\\u0000\"}",
  "\ufeff{}",
  "{\"a\":\"\\ud800\"}",
  "{\"a\" 1}"
]

/** Paths to every leaf of a JSON value, and the value itself. */
const leaves = (value: Json, path: Array<string | number> = []): Array<Array<string | number>> => {
  if (Array.isArray(value)) {
    return value.length === 0 ? [path] : value.flatMap((item, index) => leaves(item, [...path, index]))
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
    return entries.length === 0 ? [path] : entries.flatMap(([key, item]) => leaves(item, [...path, key]))
  }
  return [path]
}

const setAt = (value: Json, path: ReadonlyArray<string | number>, replacement: Json): Json => {
  if (path.length === 0) return replacement
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? setAt(item, rest, replacement) : item))
  if (typeof value === "object" && value !== null) {
    return { ...value, [head as string]: setAt((value as Record<string, Json>)[head as string] ?? null, rest, replacement) }
  }
  return replacement
}

/** Encodes for a URL, keeping the bytes of lone surrogates as raw %-escapes (encodeURIComponent throws on them). */
const encodeSegment = (value: string) => {
  if (value.startsWith("%")) return value
  return [...value].map((char) => {
    const code = char.codePointAt(0)!
    return code >= 0xd800 && code <= 0xdfff ? "%ED%A0%80" : encodeURIComponent(char)
  }).join("")
}

const rawPathValues = ["%00", "x%00y", "%ED%A0%80", "%FF", "%", "%zz", "..%2F..", "%2e%2e", hugeString(10_000), "😀", " ", "null", "-1", "1e400"]

const rawQueryValues = ["%00", "%ED%A0%80", "%FF", "%", "", "-1", "0", "1e400", "NaN", "abc", "2024-13-45", hugeString(10_000), "1&x=1"]

const missingId = "00000000-0000-0000-0000-000000000000"

/** Fills a path template with the fixtures (or a missing id for deletions, so fixtures survive) and overrides. */
const fillPath = (
  operation: Operation,
  ids: Readonly<Record<string, string>>,
  override?: { readonly name: string; readonly raw: string }
) =>
  operation.pathParams.reduce((path, name) => {
    const value = override?.name === name
      ? override.raw
      : encodeSegment(operation.method === "DELETE" ? missingId : ids[name] ?? missingId)
    return path.replace(`{${name}}`, value)
  }, operation.path)

const attemptsFor = (document: JsonSchema, operation: Operation, ids: Readonly<Record<string, string>>, next: () => number) => {
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  const basePath = fillPath(operation, ids)
  const generators: Array<() => Attempt> = []
  for (const name of operation.pathParams) {
    generators.push(() => ({ method: operation.method, url: fillPath(operation, ids, { name, raw: pick(rawPathValues) }) }))
  }
  const query = (pairs: ReadonlyArray<readonly [string, string]>) =>
    pairs.length === 0 ? "" : "?" + pairs.map(([k, v]) => `${k}=${v}`).join("&")
  generators.push(() => ({ method: operation.method, url: basePath + query([[pick(["unknown", "limt", "%00", "a%ED%A0%80"]), "1"]]) }))
  for (const { name } of operation.queryParams) {
    generators.push(() => ({ method: operation.method, url: basePath + query([[name, pick(rawQueryValues)]]) }))
    generators.push(() => ({ method: operation.method, url: basePath + query([[name, "1"], [name, pick(rawQueryValues)]]) }))
  }
  if (operation.body !== undefined) {
    const json = (value: Json): Attempt => ({
      method: operation.method,
      url: basePath,
      body: JSON.stringify(value),
      contentType: "application/json"
    })
    const mutateLeaf = (replacement: () => Json) => () => {
      const valid = sample(document, operation.body, next)
      return json(setAt(valid, pick(leaves(valid)), replacement()))
    }
    generators.push(() => json(sample(document, operation.body, next)))
    generators.push(mutateLeaf(() => pick(badStrings)))
    generators.push(mutateLeaf(() => pick(badStrings)))
    generators.push(mutateLeaf(() => pick(badValues)))
    generators.push(() => {
      const valid = sample(document, operation.body, next)
      const placeholder = "\u2063deep\u2063"
      const depth = pick([100, 10_000, 100_000])
      const nested = pick(["[".repeat(depth) + "]".repeat(depth), "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)])
      const body = JSON.stringify(setAt(valid, pick(leaves(valid)), placeholder)).replace(JSON.stringify(placeholder), nested)
      return { method: operation.method, url: basePath, body, contentType: "application/json" }
    })
    generators.push(mutateLeaf(() => Array.from({ length: pick([1000, 20_000]) }, () => pick(badStrings.slice(0, 5)))))
    generators.push(() => {
      const valid = sample(document, operation.body, next)
      return json(typeof valid === "object" && valid !== null && !Array.isArray(valid)
        ? { ...valid, [pick(["extra", "\u0000", "\ud800", "__proto__", hugeString(5000)])]: pick(badStrings) }
        : pick(badValues))
    })
    generators.push(() => ({ method: operation.method, url: basePath, body: pick(rawBodies), contentType: "application/json" }))
    generators.push(() => ({
      method: operation.method,
      url: basePath,
      body: JSON.stringify(sample(document, operation.body, next)),
      contentType: pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", "application/jsonx"])
    }))
  } else if (operation.multipart) {
    generators.push(() => ({ method: operation.method, url: basePath, body: pick(rawBodies), contentType: "application/json" }))
    generators.push(() => ({
      method: operation.method,
      url: basePath,
      body: pick(["", "--x\r\n", "--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a\u0000.txt\"\r\n\r\nhi\r\n--x--\r\n", "--x\r\nContent-Disposition: form-data; name=\"date\"\r\n\r\n\u0000\r\n--x--\r\n"]),
      contentType: "multipart/form-data; boundary=x"
    }))
  } else if (operation.method !== "GET" && operation.method !== "DELETE") {
    generators.push(() => ({ method: operation.method, url: basePath, body: pick(rawBodies), contentType: "application/json" }))
  }
  return () => pick(generators)()
}

const send = async (baseUrl: string, token: string, attempt: Attempt) => {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` }
  if (attempt.contentType !== undefined) headers["content-type"] = attempt.contentType
  const response = await fetch(baseUrl + attempt.url, {
    method: attempt.method,
    headers,
    ...(attempt.body === undefined ? {} : { body: attempt.body })
  })
  return { status: response.status, text: await response.text() }
}

const describe = (attempt: Attempt) => {
  const body = attempt.body === undefined ? "" : ` ${JSON.stringify(attempt.body.length > 160 ? attempt.body.slice(0, 160) + `…(${attempt.body.length} chars)` : attempt.body)}`
  const url = attempt.url.length > 200 ? attempt.url.slice(0, 200) + "…" : attempt.url
  return `${attempt.method} ${url}${attempt.contentType === undefined ? "" : ` [${attempt.contentType}]`}${body}`
}

export const runFuzz = async (options: FuzzOptions): Promise<FuzzReport> => {
  const started = performance.now()
  const document = await (await fetch(`${options.baseUrl}/openapi.json`)).json() as JsonSchema
  const next = random(options.seed)
  const operations = operationsOf(document)
  const generators = operations.map((operation) => ({
    operation,
    generate: attemptsFor(document, operation, options.fixtures.ids, next)
  }))
  const endpoints: Record<string, EndpointFigures> = Object.fromEntries(
    operations.map((operation) => [operation.key, { sent: 0, serverErrors: 0, unavailable: 0, leaks: 0, statuses: {}, findings: [] }])
  )
  const perEndpoint = options.perEndpoint ?? 10
  let sent = 0
  const outOfBudget = () => sent >= options.maxRequests || performance.now() - started > options.maxSeconds * 1000
  const record = async (key: string, attempt: Attempt) => {
    const figures = endpoints[key] ??= { sent: 0, serverErrors: 0, unavailable: 0, leaks: 0, statuses: {}, findings: [] }
    const reply = await send(options.baseUrl, options.fixtures.token, attempt).catch((error: unknown) => ({
      status: 599,
      text: `no response: ${String(error)}`
    }))
    sent++
    figures.sent++
    figures.statuses[reply.status] = (figures.statuses[reply.status] ?? 0) + 1
    const leak = leakIn(reply.text)
    const unavailable = isDeliberateUnavailable(reply.status, reply.text)
    const fault = reply.status >= 500 && !unavailable
    if (unavailable) figures.unavailable++
    if (fault) figures.serverErrors++
    if (leak !== undefined) figures.leaks++
    if ((fault || leak !== undefined) && figures.findings.length < 5) {
      figures.findings.push({ request: describe(attempt), status: reply.status, body: reply.text.slice(0, 300) })
    }
    return reply
  }
  while (!outOfBudget()) {
    for (const { operation, generate } of generators) {
      for (let i = 0; i < perEndpoint && !outOfBudget(); i++) await record(operation.key, generate())
    }
  }
  // What the fuzz left behind (documents it ingested, jobs it queued) is read back: stored error messages must not
  // carry internal detail either.
  const sources = await record("sweep GET /api/v1/sources", { method: "GET", url: "/api/v1/sources?limit=100" })
  const sourceIds: Array<string> = sources.status === 200 ? JSON.parse(sources.text).items.map((s: { id: string }) => s.id) : []
  for (const sourceId of sourceIds) {
    const documents = await record("sweep GET /api/v1/sources/{source_id}/documents", {
      method: "GET",
      url: `/api/v1/sources/${sourceId}/documents?limit=100`
    })
    const jobIds: Array<string> = documents.status === 200
      ? JSON.parse(documents.text).items.flatMap((d: { job_id: string | null }) => d.job_id === null ? [] : [d.job_id])
      : []
    for (const jobId of jobIds) await record("sweep GET /api/v1/jobs/{job_id}", { method: "GET", url: `/api/v1/jobs/${jobId}` })
  }
  const total = (field: "serverErrors" | "unavailable" | "leaks") => Object.values(endpoints).reduce((n, e) => n + e[field], 0)
  return {
    seed: options.seed,
    sent,
    serverErrors: total("serverErrors"),
    unavailable: total("unavailable"),
    leaks: total("leaks"),
    seconds: (performance.now() - started) / 1000,
    endpoints
  }
}

const call = async (baseUrl: string, path: string, token: string | undefined, body?: unknown) => {
  const response = await fetch(baseUrl + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const json = await response.json() as Record<string, any>
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** A user with a source, a document, an agent bound to it, a conversation and a run: ids for every path. */
export const createFixtures = async (baseUrl: string): Promise<Fixtures> => {
  const { access_token: token } = await call(baseUrl, "/api/v1/auth/login", undefined, { name: "fuzzer" })
  const source = await call(baseUrl, "/api/v1/sources", token, { name: "fuzz", connector_kind: "file_upload", config: {} })
  const document = await call(baseUrl, `/api/v1/sources/${source.id}/documents/ingest`, token, {
    title: "Fuzz notes",
    text: "Ada Lovelace met Charles Babbage in London in 1833. They discussed the Analytical Engine."
  })
  const agent = await call(baseUrl, "/api/v1/agents", token, { name: "fuzz agent", source_ids: [source.id] })
  const conversation = await call(baseUrl, `/api/v1/agents/${agent.id}/conversations`, token, {})
  const run = await call(baseUrl, `/api/v1/agents/${agent.id}/ask`, token, { question: "Who met Babbage?" })
  return {
    token,
    ids: {
      source_id: source.id,
      document_id: document.id,
      job_id: document.job_id ?? missingId,
      agent_id: agent.id,
      conversation_id: conversation.id,
      run_id: run.id ?? missingId
    }
  }
}

export const formatReport = (report: FuzzReport) => {
  const rows = Object.entries(report.endpoints).map(([key, e]) =>
    `${String(e.sent).padStart(6)} ${String(e.serverErrors).padStart(5)} ${String(e.leaks).padStart(5)}  ${key.padEnd(78)} ` +
    Object.entries(e.statuses).map(([status, n]) => `${status}:${n}`).join(" ")
  )
  const findings = Object.entries(report.endpoints).flatMap(([key, e]) =>
    e.findings.map((f) => `  ${key}: ${f.status} for ${f.request}\n    -> ${f.body}`)
  )
  return [
    `seed ${report.seed}: ${report.sent} requests in ${report.seconds.toFixed(1)} s, ` +
    `${report.serverErrors} responses 5xx, ${report.leaks} responses with internal details ` +
    `(and ${report.unavailable} deliberate 503 ${deliberateUnavailable.join("/")}, not counted as 5xx)`,
    `  sent   5xx leaks  ${"endpoint".padEnd(78)} responses by status`,
    ...rows,
    ...(findings.length === 0 ? [] : ["findings:", ...findings])
  ].join("\n")
}
