import { describe, expect, it } from "vitest"
import { mulberry32 } from "../../scripts/lib/onnx.ts"
import { countingText, mentionCounter, surfacePattern } from "../../src/stores/Graph.ts"

/** What the graph counted before the fast path: one Unicode expression per entity. */
const byExpression = (forms: ReadonlyArray<string>, text: string) => {
  const pattern = surfacePattern(forms)
  return pattern === undefined ? 0 : (text.match(pattern)?.length ?? 0)
}

const words = [
  "Jane", "jane", "JANE", "Smith", "Jane Smith", "Smithson", "ajane", "Jane2", "2Jane", "@jane", "C++", "c++x",
  "A.I.", "a.i", "IBM", "ibm's", "the", "and", "of", "Acme Corp", "acme", "corp", "Corp.", "x", "Zoë", "ſmith",
  "İstanbul", "istanbul", "naïve", "K", "k", "Q3", "q3-2024", "e-mail", "email", "mail", "x-ray", "X-Ray",
  "\u212aelvin", "βcell", "IBMé", "éIBM", "𝐀jane", "jane𝐀", "😀jane", "jane😀", "µIBM", "IBM²", "١jane", "ΣIBM",
  "\udc00jane", "jane\ud800", "a\udc00IBM", "𝐀\udc00jane"
]
const separators = [" ", " ", " ", ", ", ". ", "\n", "-", "'", "(", ")", "", "_", "/"]
const formSets: ReadonlyArray<ReadonlyArray<string>> = [
  ["Jane Smith", "Jane", "Smith"], ["jane"], ["Smith", "Smithson"], ["@jane"], ["C++"], ["A.I.", "AI"],
  ["IBM", "International Business Machines"], ["Acme Corp", "Acme"], ["Q3"], ["e-mail", "mail"], ["x-ray"],
  ["Zoë"], ["smith"], ["istanbul"], ["k"], ["  Jane  ", ""], [], ["x"], ["mail", "e-mail", "email"], ["ai", "a"]
]

describe("mention counting", () => {
  it("counts what the surface expression matches, on generated ASCII and non-ASCII texts", () => {
    const next = mulberry32(13)
    const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(next() * items.length)]!
    let compared = 0
    let nonZero = 0
    for (let round = 0; round < 3_000; round++) {
      const length = 1 + Math.floor(next() * 30)
      let text = ""
      for (let k = 0; k < length; k++) text += pick(words) + pick(separators)
      for (const forms of formSets) {
        const expected = byExpression(forms, text)
        expect(mentionCounter(forms)(text, countingText(text)), `${JSON.stringify(forms)} in ${JSON.stringify(text)}`)
          .toBe(expected)
        compared++
        if (expected > 0) nonZero++
      }
    }
    expect(compared).toBe(60_000)
    // The texts hold the forms often enough for the comparison to mean something.
    expect(nonZero).toBeGreaterThan(20_000)
  })

  it("counts in non-ASCII texts without the expression, except where a character folds to an ASCII letter", () => {
    expect(countingText("Zoë met JANE")).toBe("zoë met jane")
    expect(countingText("\u212aelvin")).toBeUndefined()
    expect(countingText("ſmith")).toBeUndefined()
    expect(mentionCounter(["Jane"])("β-Jane, 𝐀Jane, 😀Jane", countingText("β-Jane, 𝐀Jane, 😀Jane"))).toBe(2)
  })

  it("takes the longest form at a place and goes on after it", () => {
    const text = "Jane Smith met Jane, then jane smith-jones and JaneSmith; Smith."
    // "Jane Smith", "Jane", "jane smith" (before a hyphen), "Smith": not inside "JaneSmith".
    expect(mentionCounter(["Jane", "Jane Smith", "Smith"])(text, countingText(text))).toBe(4)
    expect(byExpression(["Jane", "Jane Smith", "Smith"], text)).toBe(4)
    expect(mentionCounter(["Smith"])(text, countingText(text))).toBe(3)
  })
})
