import { assert, describe, it } from "@effect/vitest"
import { instantOf, readInstant, storable } from "../../src/domain/Instant.ts"

// A zone off UTC, so a time read in the process's zone would show: JavaScript reads "2024-05-01T10:00" as local time.
process.env.TZ = "America/New_York"

const iso = (text: string) => instantOf(text)?.toISOString()

describe("instants the API accepts", () => {
  it("reads dates as midnight UTC and date-times in their offset, a time without one as UTC", () => {
    assert.strictEqual(new Date("2024-05-01T10:00").toISOString(), "2024-05-01T14:00:00.000Z", "the zone is set")
    assert.strictEqual(iso("2024-05-01T10:00"), "2024-05-01T10:00:00.000Z")
    assert.strictEqual(iso("2024-05-01"), "2024-05-01T00:00:00.000Z")
    assert.strictEqual(iso("2024-05-01T10:00:00.123456789+05:30"), "2024-05-01T04:30:00.123Z")
    assert.strictEqual(iso("2024-05-01 10:00-0200"), "2024-05-01T12:00:00.000Z")
    assert.strictEqual(iso("2024-02-29T23:59:59Z"), "2024-02-29T23:59:59.000Z")
    assert.strictEqual(iso("2000-02-29"), "2000-02-29T00:00:00.000Z")
    assert.strictEqual(iso("2024-05-01T10:00+14:00"), "2024-04-30T20:00:00.000Z")
    assert.strictEqual(iso("0099-05-01"), "0099-05-01T00:00:00.000Z", "not 1999")
    assert.strictEqual(iso("0001-01-01"), "0001-01-01T00:00:00.000Z")
    assert.strictEqual(iso("9999-12-31T23:59:59.999Z"), "9999-12-31T23:59:59.999Z")
  })

  it("refuses days a month lacks, impossible times and offsets, and instants outside the years 1 to 9999", () => {
    for (
      const text of [
        "2023-02-29", "1900-02-29", "2023-02-30T10:00:00Z", "2023-04-31", "2023-13-01", "2023-00-10", "2023-05-00",
        "2023-05-01T24:00:00Z", "2023-05-01T23:60Z", "2023-05-01T23:59:60Z", "2023-05-01T10:00+14:01",
        "2023-05-01T10:00+15:00", "2023-05-01T10:00+02:60", "0000-01-01", "0001-01-01T00:00:00+00:01",
        "9999-12-31T23:59:59-00:01", "+010000-01-01", "2023-5-1", "2023-05-01T10", "yesterday", ""
      ]
    ) assert.isNull(instantOf(text), text)
  })

  it("tells a time without an offset from one with, and a date from both", () => {
    assert.isTrue(readInstant("2024-05-01T10:00")!.floating)
    assert.isTrue(readInstant("2024-05-01 10:00:00.5")!.floating)
    assert.isFalse(readInstant("2024-05-01T10:00Z")!.floating)
    assert.isFalse(readInstant("2024-05-01")!.floating)
  })

  it("keeps only what PostgreSQL and four-digit years both write", () => {
    assert.isUndefined(storable(new Date("+010000-01-01T00:00:00Z")))
    assert.isUndefined(storable(new Date("0000-06-01T00:00:00Z")))
    assert.isUndefined(storable(new Date(Number.NaN)))
    assert.strictEqual(storable(new Date("0001-01-01T00:00:00Z"))?.toISOString(), "0001-01-01T00:00:00.000Z")
  })
})
