import { describe, expect, it } from "vitest"
import * as chrono from "chrono-node"
import { inYear, queryCues, yearNotice } from "../../src/retrieval/queryGraph.ts"

const now = new Date("2024-05-08T12:00:00Z")

describe("queryCues", () => {
  it("tells questions and requests from statements and keywords", () => {
    for (const query of [
      "Where is the company that bought Globex based?",
      "who runs Hooli",
      "Did Acme buy Globex?",
      "List the plants Acme opened",
      "Tell me what Initech announced"
    ]) expect(queryCues(query, now, chrono.parse).asks, query).toBe(true)
    for (const query of [
      "Cells lacking clpC have a defect in sporulation efficiency in Bacillus subtilis.",
      "Acme Globex acquisition",
      "Whatever happened stays here"
    ]) expect(queryCues(query, now, chrono.parse).asks, query).toBe(false)
  })

  it("reads names, dates and event-relative times", () => {
    const cues = queryCues("What did Vandelay Industries announce before 2018?", now, chrono.parse)
    expect(cues.names).toContain("vandelay industries")
    expect(cues.time).toMatchObject({ start: null, end: "2018-01-01T00:00:00.000Z" })
    expect(queryCues("Acme plants after the merger", now, chrono.parse).anchor)
      .toMatchObject({ side: "after", kinds: ["merge"] })
  })

  it("a date or period names all of it, not the instant chrono picks inside it", () => {
    const at = new Date("2026-11-23T18:30:00.000Z")
    const period = (query: string) => {
      const time = queryCues(query, at, chrono.parse).time
      return [time?.start, time?.end]
    }
    expect(period("What happened on February 9, 2026?")).toEqual(["2026-02-09T00:00:00.000Z", "2026-02-10T00:00:00.000Z"])
    expect(period("What happened in May 2023?")).toEqual(["2023-05-01T00:00:00.000Z", "2023-06-01T00:00:00.000Z"])
    expect(period("What happened last week?")).toEqual(["2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"])
    expect(period("anything this week?")).toEqual(["2026-11-23T00:00:00.000Z", "2026-11-30T00:00:00.000Z"])
    expect(period("What did we do yesterday?")).toEqual(["2026-11-22T00:00:00.000Z", "2026-11-23T00:00:00.000Z"])
    expect(period("What happened last month?")).toEqual(["2026-10-01T00:00:00.000Z", "2026-11-01T00:00:00.000Z"])
    expect(period("What happened last year?")).toEqual(["2025-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"])
    // Outside the years 1 to 9999 no database time exists: no time, rather than a failing search.
    expect(period("What happened 10000 years ago?")).toEqual([undefined, undefined])
    expect(period("What will happen in 8000 years?")).toEqual([undefined, undefined])
  })

  it("a month or day without a year is the latest that has begun, and marked yearless", () => {
    const at = new Date("2026-11-23T18:30:00.000Z")
    const time = (query: string) => {
      const found = queryCues(query, at, chrono.parse).time
      return [found?.start?.slice(0, 10), found?.end?.slice(0, 10), found?.yearless]
    }
    // The whole month, not the day chrono picks inside it.
    expect(time("When did Melanie go camping in June?")).toEqual(["2026-06-01", "2026-07-01", true])
    // The latest one not after now: chrono's nearest February 9 would be in 2027.
    expect(time("What did we do on February 9?")).toEqual(["2026-02-09", "2026-02-10", true])
    expect(time("What happened in December?")).toEqual(["2025-12-01", "2026-01-01", true])
    expect(time("What happened in November?")).toEqual(["2026-11-01", "2026-12-01", true])
    // "last", "next" and "before" fix the year.
    expect(time("What happened last November?")).toEqual(["2025-11-01", "2025-12-01", false])
    expect(time("What is planned for next June?")).toEqual(["2027-06-01", "2027-07-01", false])
    // chrono reads "May" alone only after "in"; "last May" and "next May" are read all the same.
    expect(time("Where did Caroline go last May?")).toEqual(["2026-05-01", "2026-06-01", false])
    expect(time("What is planned for next May?")).toEqual(["2027-05-01", "2027-06-01", false])
    expect(time("What may happen next?")).toEqual([undefined, undefined, undefined])
    expect(time("What happened before June?")).toEqual([undefined, "2026-06-01", false])
    expect(time("What happened in May 2023?")).toEqual(["2023-05-01", "2023-06-01", false])
  })

  it("a month named alone is a time only after a word that makes it one", () => {
    const at = new Date("2026-11-23T18:30:00.000Z")
    const text = (query: string) => queryCues(query, at, chrono.parse).time?.text ?? null
    const words = ["What did April say to Jon?", "Who is June?", "Did the march go well?", "the March for Science"]
    for (const query of words) expect(text(query), query).toBeNull()
    expect(text("What did April say in June?")).toBe("June")
    expect(text("What did April say in 2023?")).toBe("2023")
    expect(text("What happened in mid-June?")).toBe("June")
    expect(text("What happened since March?")).toBe("March")
    expect(text("What did we do on February 9?")).toBe("February 9")
  })

  it("moves a yearless time to another year, but not to a 29 February that year lacks", () => {
    expect(inYear({ start: "2025-12-01T00:00:00.000Z", end: "2026-01-01T00:00:00.000Z" }, 2023))
      .toEqual({ start: "2023-12-01T00:00:00.000Z", end: "2024-01-01T00:00:00.000Z" })
    expect(inYear({ start: "2024-02-29T00:00:00.000Z", end: "2024-03-01T00:00:00.000Z" }, 2023)).toBeNull()
    expect(inYear({ start: "2024-02-29T00:00:00.000Z", end: "2024-03-01T00:00:00.000Z" }, 2020))
      .toEqual({ start: "2020-02-29T00:00:00.000Z", end: "2020-03-01T00:00:00.000Z" })
  })

  it("tells the year a yearless time was read in", () => {
    const june = { start: new Date("2023-06-01T00:00:00Z"), finish: new Date("2023-07-01T00:00:00Z") }
    expect(yearNotice("June", june, false))
      .toBe(`"June" is read as June 2023, the latest June with events in the searched sources`)
    const ninth = { start: new Date("2027-02-09T00:00:00Z"), finish: new Date("2027-02-10T00:00:00Z") }
    expect(yearNotice("February 9", ninth, true))
      .toBe(`"February 9" is read as 9 February 2027, the next February 9 with events in the searched sources`)
  })
})
