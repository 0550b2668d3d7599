import { describe, expect, it } from "vitest"
import {
  matchKeys,
  normalizeName,
  organizationAcronyms,
  personForShortForm,
  sameEntity,
  shortFormFits,
  shortFormOf,
  shortFormPatterns
} from "../../src/extract/resolve.ts"

describe("normalizeName", () => {
  it.each([
    ["Dr. Jane Smith", "jane smith"],
    ["Smith's", "smith"],
    ["Smith’s", "smith"],
    ["James'", "james"],
    ["  JOSÉ   Álvarez ", "jose alvarez"],
    ["J.P. Morgan & Co.", "jp morgan and co"],
    ["The Guardian", "guardian"],
    ["Prof. Sir Tim Berners-Lee", "tim berners lee"],
    ["Mrs Müller", "muller"],
    ["IBM", "ibm"],
    ["Dr.", "dr"]
  ])("%s → %s", (name, key) => {
    expect(normalizeName(name)).toBe(key)
  })

  it("is idempotent", () => {
    for (const name of ["Dr. Jane Smith", "J.P. Morgan & Co.", "The Guardian", "François-Henri Pinault", "AT&T", "Ms. O'Brien"]) {
      expect(normalizeName(normalizeName(name))).toBe(normalizeName(name))
    }
  })
})

describe("matchKeys", () => {
  it("gives an organization its name, its name without the legal form and its acronyms", () => {
    expect(matchKeys({ name: "International Business Machines", kind: "organization", aliases: ["IBM"] })).toEqual([
      "international business machines",
      "ibm"
    ])
    expect(matchKeys({ name: "Acme Corp", kind: "organization", aliases: [] })).toEqual(["acme corp", "acme"])
    expect(organizationAcronyms("Bank of America")).toEqual(["ba", "boa"])
    expect(organizationAcronyms("Globex")).toEqual([])
  })

  it("gives a person full names only", () => {
    expect(
      matchKeys({ name: "Jane Smith", kind: "person", aliases: ["Smith", "J. Smith", "Dr. Jane Smith", "Jane A. Smith"] })
    ).toEqual(["jane smith", "jane a smith"])
    expect(matchKeys({ name: "Alice", kind: "person", aliases: [] })).toEqual(["alice"])
  })

  it("gives other kinds their name and aliases", () => {
    expect(matchKeys({ name: "Vision Pro", kind: "product", aliases: ["the Vision Pro"] })).toEqual(["vision pro"])
  })
})

describe("sameEntity", () => {
  const entity = (name: string, kind: "person" | "organization" | "place" | "other" | "concept", aliases: Array<string> = []) => ({
    name,
    kind,
    aliases
  })

  it("matches an organization and its acronym, or its name with a legal form", () => {
    expect(sameEntity(entity("International Business Machines", "organization"), entity("IBM", "organization"))).toBe(true)
    expect(sameEntity(entity("General Motors", "organization"), entity("GM", "organization"))).toBe(true)
    expect(sameEntity(entity("General Motors", "organization"), entity("General Mills", "organization")), "initials alone")
      .toBe(false)
    expect(sameEntity(entity("Bank of America", "organization"), entity("British Airways", "organization"))).toBe(false)
    expect(sameEntity(entity("Globex", "organization"), entity("Globex Inc.", "organization"))).toBe(true)
  })

  it("matches the same full name however it is written", () => {
    expect(sameEntity(entity("Dr. Jane Smith", "person"), entity("jane smith", "person"))).toBe(true)
    expect(sameEntity(entity("José Álvarez", "person"), entity("Jose Alvarez", "person"))).toBe(true)
  })

  it("never joins two people through a shared surname", () => {
    expect(sameEntity(entity("Jane Smith", "person", ["Smith"]), entity("John Smith", "person", ["Smith"]))).toBe(false)
    expect(sameEntity(entity("Jane Smith", "person", ["Smith"]), entity("Smith", "person"))).toBe(false)
  })

  it("keeps kinds apart unless one of them is undetermined", () => {
    expect(sameEntity(entity("Jordan", "person"), entity("Jordan", "place"))).toBe(false)
    expect(sameEntity(entity("Jordan", "other"), entity("Jordan", "place"))).toBe(true)
    expect(sameEntity(entity("Apple", "concept"), entity("Apple", "organization"))).toBe(true)
    expect(sameEntity(entity("Acme", "organization"), entity("Globex", "organization"))).toBe(false)
  })
})

describe("shortFormFits", () => {
  it.each([
    ["mel", "melanie"],
    ["deb", "deborah"],
    ["tom", "thomas"],
    ["tommy", "thomas"],
    ["tommyyy", "thomas"],
    ["pri", "priya"],
    ["lu", "lucia"],
    ["maggie", "margaret"],
    ["mags", "margaret"],
    ["hal", "harold"],
    ["lena", "elena"],
    ["kolya", "nikolai"],
    ["desi", "desislava"],
    ["meimei", "mei"]
  ])("%s is a short form of %s", (short, name) => {
    expect(shortFormFits(short, name)).toBe(true)
  })

  it.each([
    ["melanie", "mel"],
    ["mark", "margaret"],
    ["dan", "diana"],
    ["tim", "thomas"],
    ["bob", "robert"],
    ["leeds", "lee"],
    ["sam", "sam"]
  ])("%s is no short form of %s", (short, name) => {
    expect(shortFormFits(short, name)).toBe(false)
  })
})

describe("shortFormPatterns", () => {
  /** SQL's LIKE, for patterns whose only wildcards are % and _. */
  const like = (text: string, pattern: string) =>
    new RegExp(`^${pattern.replace(/%/g, ".*").replace(/_/g, ".")}$`, "su").test(text)
  const matches = (short: string, key: string) => shortFormPatterns(short).some((pattern) => like(key, pattern))

  it("every first name a word is or fits as a short form matches one of its patterns", () => {
    // Words of few letters, so that many pairs fit; a fixed seed, so a failure repeats.
    let seed = 7
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
    const word = (min: number, max: number) =>
      Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, () => "aehmo"[Math.floor(random() * 5)])
        .join("")
    let fits = 0
    for (let i = 0; i < 50_000; i++) {
      const short = word(2, 6)
      const key = `${word(2, 9)}${random() < 0.5 ? "" : ` ${word(2, 6)}`}`
      const first = key.split(" ")[0]!
      if (first !== short && !shortFormFits(short, first)) continue
      fits++
      expect(matches(short, key), `${short} → ${key}`).toBe(true)
    }
    expect(fits).toBeGreaterThan(1_000)
    for (const [short, key] of [["mel", "melanie"], ["tom", "thomas"], ["tommyyy", "thomas"], ["hal", "harold"]]) {
      expect(matches(short!, key!), `${short} → ${key}`).toBe(true)
    }
  })

  it("leaves out names the word cannot stand for", () => {
    expect(matches("mel", "margaret")).toBe(false)
    expect(matches("mel", "mary")).toBe(false)
    expect(matches("tom", "tina")).toBe(false)
  })
})

describe("personForShortForm", () => {
  const persons = [
    { id: "melanie", key: "melanie" },
    { id: "deborah", key: "deborah okafor" },
    { id: "hollis", key: "sam hollis" },
    { id: "samira", key: "samira" }
  ]

  it("finds the one person whose first name the word is or fits", () => {
    expect(personForShortForm("mel", persons)).toBe("melanie")
    expect(personForShortForm("deb", persons)).toBe("deborah")
    expect(personForShortForm("deborah", persons)).toBe("deborah")
  })

  it("finds none when two people fit or nobody does", () => {
    expect(personForShortForm("sam", persons)).toBeNull()
    expect(personForShortForm("tom", persons)).toBeNull()
  })

  it("considers one-word names of persons and undetermined kinds only", () => {
    expect(shortFormOf({ name: "Mel", kind: "person" })).toBe("mel")
    expect(shortFormOf({ name: "Deb", kind: "other" })).toBe("deb")
    expect(shortFormOf({ name: "Melanie Smith", kind: "person" })).toBeNull()
    expect(shortFormOf({ name: "Bath", kind: "place" })).toBeNull()
  })
})
