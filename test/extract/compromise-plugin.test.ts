/**
 * src/extract/nlp.ts replaces compromise's pattern sweep and puts a quick test in front of its matcher. Both must
 * find exactly what compromise's own methods find: here they run side by side on the tagged sentences of the
 * repository's fixtures (news, meeting notes, chat, the conversation logs) and of sentences written to reach the
 * matcher's corners (contractions, slashes, hyphens, quotes, possessives, numbers). Its `clone` copies only the
 * sentences a view points into: what compromise reads of verb phrases through clones must not change.
 */
import nlpBare from "compromise"
import { describe, expect, it } from "vitest"
import { fixtureTexts } from "../support/fixtureTexts.ts"

interface Methods {
  readonly one: Record<string, (...args: ReadonlyArray<unknown>) => unknown>
}
interface World {
  readonly methods: Methods
  readonly model: { readonly two: { readonly matches: unknown } }
}

// compromise's own methods, taken before the plugin replaces them.
const bareWorld = nlpBare.world() as unknown as World
const original = { ...bareWorld.methods.one }
const View = Object.getPrototypeOf(nlpBare("")).constructor as { prototype: Record<string, unknown> }
const bareClone = View.prototype.clone
// The post-tagger's patterns as written: building a net parses them in place, so this test builds its own from a copy.
const postTaggerPatterns = structuredClone(bareWorld.model.two.matches)
const { default: nlp } = await import("../../src/extract/nlp.ts")
const world = nlp.world() as unknown as World

const written = [
  "I don't think we'll make it, but she'd've gone anyway and/or stayed home.",
  "Dr. O'Neill's co-founder said \"it's over\" at 5:30pm on Feb. 9 — then left for St. Luke's.",
  "The U.S.-based firm's Q3 revenue rose 12% to $4.5bn, analysts at J.P. Morgan wrote.",
  "Wasn't it Mel who'd been to Lisbon twice?? Yes!!! She won't go again, she says.",
  "We can't, won't and shouldn't; y'all gotta see this: 'The Queen's Gambit' (2020).",
  "Interleukin-6 and TNF-alpha were significantly up-regulated in ApoE-/- mice (p < 0.05).",
  "a lower case line with no capitals at all where nothing much happens",
  "I like café a lot, and the big dog ran home to Zoë."
]

const texts = [...fixtureTexts(), ...written]

/** What a sweep found, as compromise reports it: each pattern's text and where it matched. */
const found = (results: unknown) =>
  (results as ReadonlyArray<{ readonly match: string; readonly pointer: ReadonlyArray<number> }>).map((result) =>
    `${result.match} @ ${result.pointer.join(",")}`
  )

describe("compromise through the plugin", () => {
  it("sweeps each net exactly as compromise's own sweep and matcher do", () => {
    const nets = [
      world.methods.one.buildNet!(postTaggerPatterns, world),
      // Patterns of other shapes: groups, anchors, negatives, lists, ranges.
      world.methods.one.buildNet!(
        [
          { match: "#Noun+ (of|for) #Noun+", tag: "x" },
          { match: "^#Adjective [#Noun]", group: 0, tag: "y" },
          { match: "(#Pronoun|#Person) #Adverb? #Verb .{0,2} #Place$", tag: "z" },
          { match: "[won't|don't] #Verb", group: 0, tag: "w" },
          { match: "!#Determiner #Noun #Comma? #Verb+", tag: "v" }
        ],
        world
      )
    ]
    const bareMethods = { ...world.methods, one: { ...world.methods.one, match: original.match } }
    let sentences = 0
    let matches = 0
    for (const text of texts) {
      const docs = (nlp(text) as unknown as { readonly docs: ReadonlyArray<unknown> }).docs
      for (const net of nets) {
        const ours = found(world.methods.one.bulkMatch!(docs, net, world.methods))
        const theirs = found(original.bulkMatch!(docs, net, bareMethods))
        expect(ours, text).toEqual(theirs)
        matches += ours.length
      }
      sentences += docs.length
    }
    // The comparison covered real work: thousands of sentences and matches.
    expect(sentences).toBeGreaterThan(1000)
    expect(matches).toBeGreaterThan(1000)
  })

  it("matches a pattern where compromise's matcher does, and nowhere else", () => {
    const patterns = [
      "#Person", "#Noun #Verb", "[#Adjective] #Noun", "^#Pronoun #Verb", "#Verb #Noun$", "(she|he) #Adverb? #Verb",
      "won't", "#Value+ #Unit?", "#Possessive #Noun", "and/or", "!#Noun #Verb", "#Month #Value", ". #Place",
      "#ProperNoun+ (said|says)", "#Copula #Negative? #Adjective", "(#Person|#Organization) #Verb .* #Place",
      "#Adverb #Verb", "#Determiner #Adjective #Noun", "(was|were) #Adverb #PastTense", "{be} #Gerund",
      "#Determiner [#Adjective+] #Noun", "[#Noun] (and|or) [#Noun]", "#Verb [#Adverb?] #Preposition", "#Noun #Noun+",
      "<Verb>+", "<Noun> [<Verb>+]", "%Plural|Verb% %Plural|Verb%", "#Determiner [%Noun|Verb%]", "@hasComma",
      "(#Noun && @hasComma) #Noun", "(#Singular && @hasHyphen) #PresentTense", "(#Copula|#Determiner) #Adjective+",
      "#Noun (and|or) (#Adjective|very #Adverb)", "(#Negative|#Auxiliary|#Modal)+ #Verb", "^(#Pronoun|#Person) #Verb",
      "(!#Noun && #Adjective) #Noun", "(#Verb|#Noun)? #Adverb", "(#Value && !#Date)", "café", "like café"
    ]
    let found = 0
    for (const text of [...written, ...texts.slice(0, 300)]) {
      const docs = (nlp(text) as unknown as { readonly docs: ReadonlyArray<unknown> }).docs
      for (const pattern of patterns) {
        // As parsed, and with the start and end marks compromise's growLeft, growRight and join add to the tokens
        // of a parsed pattern (the plugin keeps the tests it compiled from them before).
        const marked = world.methods.one.parseMatch!(pattern, {}, world) as Array<Record<string, unknown>>
        marked[0] = { ...marked[0], start: true }
        marked[marked.length - 1] = { ...marked[marked.length - 1], end: true }
        for (const regs of [world.methods.one.parseMatch!(pattern, {}, world), marked]) {
          // The whole matches with their groups, a group's spans alone, no group; with a view's word cache too.
          for (const todo of [{ regs }, { regs, group: 0 }, { regs, group: false }]) {
            for (const cache of [undefined, world.methods.one.cacheDoc!(docs)]) {
              const ours = world.methods.one.match!(docs, todo, cache) as { readonly ptrs: ReadonlyArray<unknown> }
              const theirs = original.match!(docs, todo, cache) as { readonly ptrs: ReadonlyArray<unknown> }
              expect(ours, `${pattern} in ${text}`).toEqual(theirs)
              found += ours.ptrs.length
            }
          }
        }
      }
    }
    expect(found).toBeGreaterThan(100)
  })

  it("reads verb phrases through its clones as compromise's own clone does", () => {
    type Parsed = { readonly verbs: () => { readonly json: () => unknown } }
    let verbs = 0
    for (const text of texts) {
      const parsed = nlp(text) as unknown as Parsed
      const bare = () => {
        const clone = View.prototype.clone
        View.prototype.clone = bareClone
        try {
          return parsed.verbs().json()
        } finally {
          View.prototype.clone = clone
        }
      }
      const before = bare()
      const ours = parsed.verbs().json()
      expect(ours, text).toEqual(before)
      // Nor did reading them through the shared sentences change the document.
      expect(bare(), text).toEqual(before)
      verbs += (ours as ReadonlyArray<unknown>).length
    }
    expect(verbs).toBeGreaterThan(1000)
  })
})
