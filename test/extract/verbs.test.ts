/**
 * src/extract/verbs.ts finds a sentence's verb phrases over its tagged terms and reads each one, in place of
 * compromise's `verbs()` and its `json()`: it must find exactly the phrases compromise finds and read them as it
 * does, on the repository's fixtures (news, meeting notes, chat, the conversation logs) and on sentences written to
 * reach each of compromise's splits and verb forms.
 */
import { describe, expect, it } from "vitest"
import { fixtureTexts } from "../support/fixtureTexts.ts"
import nlp from "../../src/extract/nlp.ts"
import type { TaggedTerm } from "../../src/extract/spans.ts"
import { compromiseReading, readVerbPhrase, type VerbReading, verbPhrasesOf } from "../../src/extract/verbs.ts"

const written = [
  "All I do is talk, and the reason he will is simple.",
  "She would like being pampered and he would like to be pampered.",
  "Can you help fix the sink, walk the dog, or wash up?",
  "What I can sell is cheap; what I can sell will be cheaper.",
  "The man directing had left before the film directed was shown.",
  "Allow yourself a break, they told themselves.",
  "The people sitting near were quietly annoyed.",
  "Everyone he met told him so, and everyone he met had told her too.",
  "The fans that were blowing felt amazing.",
  "The festival held annually is called Lumen, and what was planned was never done.",
  "I didn't want to go but I'd have gone if they hadn't cancelled.",
  "We've been trying to get it fixed since Monday and it's still not working!!",
  "It will have been cleaned by then; it was being painted and had been sold, and is being moved.",
  "She is going to drink it, he used to walk, we do walk, they could have walked and you can walk.",
  "He started looking, will start looking, has been walking, had been walking and would have been walked.",
  "Walk!",
  "I want to go, wanted to stay, and will want to leave; he quickly and quietly left, then never really returned."
]

const texts = [...fixtureTexts(), ...written]

type Sentence = {
  readonly docs: ReadonlyArray<ReadonlyArray<TaggedTerm>>
  readonly document: ReadonlyArray<ReadonlyArray<TaggedTerm>>
  readonly fullPointer: ReadonlyArray<ReadonlyArray<number>>
  readonly verbs: () => { readonly forEach: (each: (verb: { readonly fullPointer: ReadonlyArray<ReadonlyArray<number>> }) => void) => void }
}

describe("verb phrases", () => {
  it("are found where compromise's verbs() finds them, and nowhere else", () => {
    let sentences = 0
    let phrases = 0
    for (const text of texts) {
      for (const line of text.split("\n")) {
        ;(nlp(line).sentences() as unknown as { forEach: (each: (one: Sentence) => void) => void }).forEach((sentence) => {
          const theirs: Array<string> = []
          sentence.verbs().forEach((verb) => theirs.push(`${verb.fullPointer[0]![1]}-${verb.fullPointer[0]![2]}`))
          const ours = verbPhrasesOf(sentence.docs[0]!).map(([start, end]) => `${start}-${end}`)
          expect(ours, line).toEqual(theirs)
          sentences++
          phrases += ours.length
        })
      }
    }
    expect(sentences).toBeGreaterThan(1000)
    expect(phrases).toBeGreaterThan(1000)
  })

  it("split the chunker's verb runs where compromise splits them", () => {
    const phrasesOf = (text: string) => {
      const sentence = (nlp(text).sentences() as unknown as { readonly docs: ReadonlyArray<ReadonlyArray<TaggedTerm>> })
        .docs[0]!
      return verbPhrasesOf(sentence).map(([start, end]) => sentence.slice(start, end).map((term) => term.text).join(" "))
    }
    // Each of these is one run of the chunker's verb words.
    expect(phrasesOf("All I do is talk.")).toEqual(["do", "is"])
    expect(phrasesOf("Everyone he met told him.")).toEqual(["met", "told"])
    expect(phrasesOf("Everyone he met had told her.")).toEqual(["met", "had told"])
    expect(phrasesOf("He would like to be pampered.")).toEqual(["would like", "be pampered"])
    expect(phrasesOf("Can you help fix the sink?")).toEqual(["Can", "help", "fix"])
    expect(phrasesOf("The fans that were blowing felt amazing.")).toEqual(["were blowing", "felt"])
    expect(phrasesOf("The festival held annually is called Lumen.")).toEqual(["held annually", "is called"])
  })

  it("are read as compromise's verbs().json() reads them: infinitive, negation, form, tense, passive", () => {
    const shown = (reading: VerbReading) => ({
      ...reading,
      grammar: { ...reading.grammar, passive: reading.grammar.passive === true }
    })
    let read = 0
    let contractions = 0
    const forms = new Set<string>()
    for (const text of texts) {
      for (const line of text.split("\n")) {
        const parsed = nlp(line) as unknown as Sentence
        const documentTerms = parsed.document.reduce((count, terms) => count + terms.length, 0)
        ;(parsed as unknown as { sentences: () => { forEach: (each: (one: Sentence) => void) => void } }).sentences()
          .forEach((sentence) => {
            const terms = sentence.docs[0]!
            const n = sentence.fullPointer[0]![0]!
            for (const span of verbPhrasesOf(terms)) {
              const ours = readVerbPhrase(terms, span, n, documentTerms)
              if (ours === null) {
                // Only a phrase with a contraction is left to compromise.
                expect(terms.slice(span[0], span[1]).some((term) => term.implicit)).toBe(true)
                contractions++
                continue
              }
              const theirs = compromiseReading(sentence.document, n, span)!
              expect(shown(ours), `${line} [${span.join("-")}]`).toEqual({
                infinitive: theirs.infinitive,
                negative: theirs.negative,
                grammar: {
                  ...(theirs.grammar.form === undefined ? {} : { form: theirs.grammar.form }),
                  tense: theirs.grammar.tense,
                  passive: theirs.grammar.passive === true,
                  isInfinitive: theirs.grammar.isInfinitive
                }
              })
              if (ours.grammar.form !== undefined) forms.add(ours.grammar.form)
              read++
            }
          })
      }
    }
    expect(read).toBeGreaterThan(1000)
    expect(contractions).toBeGreaterThan(10)
    // The comparison met most of compromise's forms, passives and perfects among them.
    expect(forms.size).toBeGreaterThan(12)
  })
})
