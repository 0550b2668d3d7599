import { describe, expect, it } from "vitest"
import type { ExtractionChunk } from "../../src/extract/Extraction.ts"
import { withoutRepeated } from "../../src/extract/budget.ts"

/** Three messages, each on a line of its own; offsets in the chunk's text. */
const text = "Rosa: I baked bread.\nTomas: I fixed the bike.\nRosa: We hiked up Snowdon."
const at = (line: string) => ({ start: text.indexOf(line), end: text.indexOf(line) + line.length })
const chunk: ExtractionChunk = {
  ordinal: 1,
  text,
  speaker: null,
  spokenAt: "2024-03-01T10:00:00.000Z",
  messages: [
    { speaker: "Rosa", spokenAt: "2024-03-01T10:00:00.000Z", ...at("Rosa: I baked bread.") },
    { speaker: "Tomas", spokenAt: "2024-03-02T10:00:00.000Z", ...at("Tomas: I fixed the bike.") },
    { speaker: "Rosa", spokenAt: "2024-03-03T10:00:00.000Z", ...at("Rosa: We hiked up Snowdon.") }
  ]
}

describe("withoutRepeated", () => {
  it("leaves a chunk that repeats nothing as it is", () => {
    expect(withoutRepeated(chunk, 0)).toBe(chunk)
    expect(withoutRepeated(chunk, -12)).toBe(chunk)
  })

  it("drops the repeated opening; the messages that remain still cover their own words", () => {
    const skip = text.indexOf("Tomas")
    const read = withoutRepeated(chunk, skip)
    expect(read.text).toBe(text.slice(skip))
    expect(read.messages?.map((message) => message.speaker)).toEqual(["Tomas", "Rosa"])
    for (const message of read.messages ?? []) {
      const original = chunk.messages!.find((one) => one.spokenAt === message.spokenAt)!
      expect(read.text.slice(message.start, message.end)).toBe(text.slice(original.start, original.end))
    }
  })

  it("keeps the part of a message the cut falls inside, and reads nothing of a chunk repeated whole", () => {
    const inside = withoutRepeated(chunk, text.indexOf("fixed"))
    expect(inside.messages?.[0]).toMatchObject({ speaker: "Tomas", start: 0, end: "fixed the bike.".length })
    const whole = withoutRepeated(chunk, text.length + 5)
    expect(whole.text).toBe("")
    expect(whole.messages).toEqual([])
  })
})
