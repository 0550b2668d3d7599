/**
 * compromise as the rules use it, with three of its own methods made cheaper through its plugin interface (same
 * results): on every match it strips accents from the pattern and parses the pattern again, most of them its own
 * fixed patterns: about a fifth of the rules' time on SciFact abstracts; and its pattern sweep (post-tagger,
 * chunker) is `sweep.ts`, which picks each sentence's candidate patterns from the sentence's words rather than by
 * testing all of the net's hooks against it.
 */
import nlp from "compromise"
import { sweep } from "./sweep.ts"

type Token = Record<string, unknown>
type World = unknown
interface Methods {
  readonly killUnicode: (text: string, world: World) => string
  readonly parseMatch: (pattern: unknown, options: unknown, world: World) => Array<Token>
}

const { killUnicode, parseMatch } = (nlp.world() as unknown as { readonly methods: { readonly one: Methods } }).methods.one
const ascii = /^[\x00-\x7f]*$/
/** Enough for compromise's own patterns and the rules'; patterns built from the text are not kept past it. */
const maxPatterns = 20_000
const parsed = new Map<string, ReadonlyArray<Token>>()
/** Options without keys are no options (and need no JSON text for the key). */
const isEmpty = (options: unknown) => {
  for (const _ in options as object) return false
  return true
}

nlp.plugin({
  methods: {
    one: {
      bulkMatch: sweep,
      // Its table maps no ASCII character to another one.
      killUnicode: (text: string, world: World) =>
        typeof text === "string" && ascii.test(text) ? text : killUnicode(text, world),
      // Its callers change no token but the first or last (growLeft, growRight and join mark them start/end), so
      // each call gets a fresh array whose first and last tokens are its own.
      parseMatch: (pattern: unknown, options: unknown, world: World) => {
        if (typeof pattern !== "string") return parseMatch(pattern, options, world)
        const key = options === undefined || options === null || isEmpty(options)
          ? `\u0000${pattern}`
          : `${JSON.stringify(options)}\u0000${pattern}`
        let tokens = parsed.get(key)
        if (tokens === undefined) {
          tokens = parseMatch(pattern, options, world)
          if (parsed.size < maxPatterns) parsed.set(key, tokens)
          else return tokens
        }
        const own = tokens.slice()
        if (own.length > 0) own[0] = { ...own[0] }
        if (own.length > 1) own[own.length - 1] = { ...own[own.length - 1] }
        return own
      }
    }
  }
} as Parameters<typeof nlp.plugin>[0])

export default nlp
