import { Schema, SchemaTransformation } from "effect"

const unpairedSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Why a string cannot be stored as text, or undefined when it can. */
export const textProblem = (s: string): string | undefined =>
  s.includes("\u0000")
    ? "must not contain NUL (\\u0000) characters"
    : unpairedSurrogate.test(s)
    ? "must not contain unpaired UTF-16 surrogates"
    : undefined

/**
 * Every string the API accepts passes this check. PostgreSQL text cannot hold NUL and a lone surrogate has no
 * UTF-8 form, so both are refused (422 naming the field) rather than stripped: silently changing what a user
 * typed would store something they did not send.
 */
export const isStorableText = Schema.makeFilter<string>((s) => textProblem(s) ?? true, {
  expected: "a string without NUL characters or unpaired UTF-16 surrogates"
})

/** Any string the API accepts. */
export const Text = Schema.String.check(isStorableText)

/** Lengths count characters (Unicode code points), as JSON Schema's minLength and maxLength do. */
export const characters = (minimum: number, maximum: number) =>
  Schema.isBetweenCodePoints(minimum, maximum, {
    message: minimum === 0
      ? `must be at most ${maximum} characters`
      : `must be ${minimum} to ${maximum} characters`
  })

/** A string of `minimum` to `maximum` characters. */
export const textOf = (minimum: number, maximum: number) => Text.check(characters(minimum, maximum))

/**
 * A string of `minimum` to `maximum` characters as sent (so OpenAPI can publish the bound), trimmed of surrounding
 * whitespace, and not empty after trimming when `minimum` is positive.
 */
export const trimmedTextOf = (minimum: number, maximum: number) =>
  textOf(minimum, maximum).pipe(Schema.decodeTo(
    Schema.Trimmed.check(Schema.isMinCodePoints(minimum, { message: "must not be empty" })),
    SchemaTransformation.trim()
  ))

/** The first `maximum` characters (code points) of `s`: a cut never splits a surrogate pair into unstorable halves. */
export const truncateCharacters = (s: string, maximum: number): string => {
  let units = 0
  let count = 0
  for (const character of s) {
    if (count === maximum) return s.slice(0, units)
    units += character.length
    count++
  }
  return s
}

/** An id in a path, query or body: opaque to clients, so only its length and storability are checked. */
export const IdText = textOf(1, 100)

/** Free-form JSON nests at most this deep: deeper values are refused before a recursive walk or jsonb meets them. */
export const maxJsonDepth = 32

const unstorableIn = (value: unknown, path: ReadonlyArray<PropertyKey>): Array<Schema.FilterIssue> => {
  if (typeof value === "string") {
    const problem = textProblem(value)
    return problem === undefined ? [] : [{ path, issue: problem }]
  }
  if (typeof value !== "object" || value === null) return []
  if (path.length >= maxJsonDepth) return [{ path, issue: `must not nest more than ${maxJsonDepth} levels deep` }]
  if (Array.isArray(value)) return value.flatMap((item, index) => unstorableIn(item, [...path, index]))
  return Object.entries(value).flatMap(([key, item]) => {
    const problem = textProblem(key)
    return problem === undefined
      ? unstorableIn(item, [...path, key])
      : [{ path: [...path, key], issue: `the field name ${problem}` }]
  })
}

/** The first string or field name in a JSON value that cannot be stored as text, with why. */
export const unstorableJson = (value: unknown): string | undefined => {
  const [first] = unstorableIn(value, [])
  return first === undefined || typeof first !== "object" || !("path" in first)
    ? undefined
    : `${first.path.map((key) => typeof key === "number" ? `[${key}]` : `.${String(key)}`).join("") || "the value"} ${first.issue}`
}

/** For free-form JSON (a connector's config): every string and field name inside is storable text, nesting is bounded. */
export const isStorableJson = Schema.makeFilter<unknown>((value) => {
  const issues = unstorableIn(value, [])
  return issues.length === 0 ? true : issues
}, { expected: "JSON without NUL characters or unpaired UTF-16 surrogates" })
