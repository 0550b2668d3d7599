import { describe, expect, it } from "vitest"
import { queryCues } from "../../src/retrieval/queryGraph.ts"

const now = new Date("2024-05-08T12:00:00Z")

describe("queryCues", () => {
  it("tells questions and requests from statements and keywords", () => {
    for (const query of [
      "Where is the company that bought Globex based?",
      "who runs Hooli",
      "Did Acme buy Globex?",
      "List the plants Acme opened",
      "Tell me what Initech announced"
    ]) expect(queryCues(query, now).asks, query).toBe(true)
    for (const query of [
      "Cells lacking clpC have a defect in sporulation efficiency in Bacillus subtilis.",
      "Acme Globex acquisition",
      "Whatever happened stays here"
    ]) expect(queryCues(query, now).asks, query).toBe(false)
  })

  it("reads names, dates and event-relative times", () => {
    const cues = queryCues("What did Vandelay Industries announce before 2018?", now)
    expect(cues.names).toContain("vandelay industries")
    expect(cues.time).toMatchObject({ start: null, end: "2018-01-01T00:00:00.000Z" })
    expect(queryCues("Acme plants after the merger", now).anchor).toMatchObject({ side: "after", kinds: ["merge"] })
  })
})
