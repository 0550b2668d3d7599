import { Effect, Layer, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"
import type { Format } from "../ingest/parse/formats.ts"
import type { ConnectorItem, Harvest, SkippedItem } from "./Item.ts"

export interface WebOptions {
  readonly urls: ReadonlyArray<string>
  readonly crawlDepth: number
  readonly maxPages: number
  readonly allowPrivate: boolean
  readonly timeoutSeconds: number
  readonly maxPageBytes: number
}

const formatsByType: Record<string, Format> = {
  "text/html": "html",
  "application/xhtml+xml": "html",
  "text/plain": "text",
  "text/markdown": "markdown",
  "application/pdf": "pdf",
  "application/json": "json",
  "text/csv": "csv"
}

const privateV4 = (ip: string) => {
  const [a, b] = ip.split(".").map(Number) as [number, number]
  return a === 0 || a === 10 || a === 127 || a >= 224 || (a === 100 && b >= 64 && b < 128) ||
    (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168)
}

/** Loopback, private, link-local, unique-local and multicast addresses are not fetched unless allowed. */
export const isPrivateAddress = (ip: string): boolean => {
  if (isIP(ip) === 4) return privateV4(ip)
  const lower = ip.toLowerCase()
  const mapped = lower.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/)
  if (mapped) return privateV4(mapped[1]!)
  return lower === "::" || lower === "::1" || /^f[cd]/.test(lower) || /^fe[89ab]/.test(lower) || lower.startsWith("ff")
}

class PageSkipped {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

/** The URL without its fragment: one page, one key. */
const normalize = (url: URL) => {
  const copy = new URL(url)
  copy.hash = ""
  return copy.toString()
}

const checkHost = (url: URL, allowPrivate: boolean) =>
  Effect.tryPromise({
    try: async () => {
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new PageSkipped("not an http(s) URL")
      if (allowPrivate) return
      const host = url.hostname.replace(/^\[|\]$/g, "")
      const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address)
      if (addresses.some(isPrivateAddress)) {
        throw new PageSkipped("points to a private or local network address (ENGRAM_WEB_ALLOW_PRIVATE is off)")
      }
    },
    catch: (error) => error instanceof PageSkipped ? error : new PageSkipped(`cannot resolve ${url.hostname}`)
  })

const fetchPage = (start: URL, options: WebOptions) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let url = start
    for (let hop = 0; hop <= 5; hop++) {
      yield* checkHost(url, options.allowPrivate)
      const response = yield* client.execute(HttpClientRequest.get(url).pipe(
        HttpClientRequest.setHeader("user-agent", "Engram/1 (+self-hosted knowledge retrieval)")
      )).pipe(
        Effect.timeout(`${options.timeoutSeconds} seconds`),
        Effect.mapError((error) =>
          new PageSkipped(error._tag === "TimeoutError" ? "timed out" : "could not be fetched")
        )
      )
      if (response.status >= 300 && response.status < 400 && response.headers.location !== undefined) {
        url = new URL(response.headers.location, url)
        continue
      }
      if (response.status !== 200) return yield* Effect.fail(new PageSkipped(`answered HTTP ${response.status}`))
      const type = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
      const format = formatsByType[type]
      if (format === undefined) return yield* Effect.fail(new PageSkipped(`unsupported content type ${type || "(none)"}`))
      if (Number(response.headers["content-length"] ?? 0) > options.maxPageBytes) {
        return yield* Effect.fail(new PageSkipped(`larger than ${options.maxPageBytes} bytes`))
      }
      const chunks: Array<Uint8Array> = []
      let size = 0
      yield* response.stream.pipe(
        Stream.mapError(() => new PageSkipped("the body could not be read")),
        Stream.runForEach((chunk) => {
          size += chunk.length
          if (size > options.maxPageBytes) return Effect.fail(new PageSkipped(`larger than ${options.maxPageBytes} bytes`))
          chunks.push(chunk)
          return Effect.void
        }),
        Effect.timeout(`${options.timeoutSeconds} seconds`),
        Effect.mapError((error) => error instanceof PageSkipped ? error : new PageSkipped("timed out"))
      )
      return { url, format, bytes: Buffer.concat(chunks), lastModified: isoDate(response.headers["last-modified"]) }
    }
    return yield* Effect.fail(new PageSkipped("too many redirects"))
  })

/** A date header or meta value as ISO-8601; undefined when absent or unreadable. */
const isoDate = (value: string | null | undefined) => {
  const time = value === null || value === undefined ? Number.NaN : Date.parse(value)
  return Number.isNaN(time) ? undefined : new Date(time).toISOString()
}

const titleAndLinks = (parseHTML: typeof import("linkedom").parseHTML, html: string, base: URL) => {
  const { document } = parseHTML(html)
  const title = document.querySelector("title")?.textContent?.trim() ?? ""
  const published = isoDate(document.querySelector('meta[property="article:published_time"]')?.getAttribute("content"))
  const links: Array<URL> = []
  for (const anchor of Array.from(document.querySelectorAll("a[href]")) as Array<{ getAttribute(name: string): string | null }>) {
    try {
      links.push(new URL(anchor.getAttribute("href") ?? "", base))
    } catch {
      // not a URL
    }
  }
  return { title, links, published }
}

/**
 * Fetches the configured pages and, up to `crawlDepth` hops, the same-site pages they link to, at most
 * `maxPages`. Each fetch has a timeout and a size limit; redirects are followed (5 at most) and every hop's
 * address is checked. Pages that cannot be taken are reported with the reason, never fatal.
 */
export const crawlWeb = (options: WebOptions): Effect.Effect<Harvest> =>
  Effect.gen(function*() {
    const items: Array<ConnectorItem> = []
    const skipped: Array<SkippedItem> = []
    const seen = new Set<string>()
    let frontier = options.urls.map((url) => new URL(url))
    for (let depth = 0; depth <= options.crawlDepth && frontier.length > 0; depth++) {
      const next: Array<URL> = []
      for (const url of frontier) {
        const key = normalize(url)
        if (seen.has(key)) continue
        if (seen.size >= options.maxPages) break
        seen.add(key)
        const page = yield* Effect.result(fetchPage(url, options))
        if (page._tag === "Failure") {
          skipped.push({ key, reason: page.failure.reason })
          continue
        }
        const { format, bytes } = page.success
        let title = key
        let date = page.success.lastModified
        if (format === "html") {
          // linkedom is loaded with the first page crawled: the service's thread needs it for nothing else.
          const { parseHTML } = yield* Effect.promise(() => import("linkedom"))
          const found = titleAndLinks(parseHTML, new TextDecoder().decode(bytes), page.success.url)
          title = found.title || key
          date = found.published ?? date
          for (const link of found.links) {
            if (link.host === url.host && (link.protocol === "http:" || link.protocol === "https:")) next.push(link)
          }
        }
        items.push({ key, title, format, bytes, date })
      }
      frontier = next
    }
    return { items, skipped }
  }).pipe(
    Effect.provide(Layer.mergeAll(
      FetchHttpClient.layer,
      Layer.succeed(FetchHttpClient.RequestInit, { redirect: "manual" })
    ))
  )

