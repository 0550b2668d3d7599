/** Instants as the API and the stores take them (no Effect imports: the ingestion threads load this). */

/**
 * `date` when PostgreSQL and ISO 8601's four-digit years can both write it (the years 1 to 9999), else undefined:
 * JavaScript's dates reach year 275760 and year 0, which a `timestamptz` refuses.
 */
export const storable = (date: Date): Date | undefined => {
  const year = date.getUTCFullYear()
  return year >= 1 && year <= 9999 ? date : undefined
}

const isoPattern =
  /^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d\d):?(\d\d))?)?$/

/** How many days the month (1 to 12) of the year has. */
const daysIn = (year: number, month: number) => {
  const last = new Date(0)
  last.setUTCFullYear(year, month, 0)
  return last.getUTCDate()
}

export interface Reading {
  readonly date: Date
  /** Whether a time of day was given without an offset. */
  readonly floating: boolean
}

/**
 * Reads an ISO 8601 date ("2024-05-01", midnight UTC) or date-time ("2024-05-01T10:00:00Z", "2024-05-01 10:00+0200";
 * without an offset it is UTC) whose fields name a real moment: a day the month has, hours 0–23, minutes and seconds
 * 0–59, an offset within ±14:00, an instant in the years 1 to 9999. JavaScript's own parser rolls 30 February over
 * to 2 March and reads a time without an offset in the server's zone, so it is not used.
 */
export const readInstant = (text: string): Reading | undefined => {
  const parts = isoPattern.exec(text)
  if (parts === null) return undefined
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 10, 11].map((at) =>
    Number(parts[at] ?? 0)
  ) as [number, number, number, number, number, number, number, number]
  if (
    month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59 ||
    offsetMinutes > 59 || offsetHours * 60 + offsetMinutes > 14 * 60
  ) return undefined
  const date = new Date(0)
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, Number((parts[7] ?? "0").padEnd(3, "0").slice(0, 3)))
  const offset = (parts[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes)
  const instant = storable(new Date(date.getTime() - offset * 60_000))
  return instant === undefined
    ? undefined
    : { date: instant, floating: parts[4] !== undefined && parts[8] === undefined && parts[9] === undefined }
}

/** The instant an ISO 8601 date or date-time names (see `readInstant`); null when none is given or it names none. */
export const instantOf = (text: string | undefined): Date | null =>
  text === undefined ? null : readInstant(text)?.date ?? null
