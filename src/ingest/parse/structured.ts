import { type Parsed, ParsedBuilder } from "../Parsed.ts"
import { Unparseable } from "./binary.ts"

const render = (value: unknown, prefix: string, lines: Array<string>) => {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((item, i) => [String(i), item] as const) : Object.entries(value)
    for (const [key, item] of entries) render(item, prefix === "" ? key : `${prefix}.${key}`, lines)
  } else {
    lines.push(prefix === "" ? String(value) : `${prefix}: ${String(value)}`)
  }
}

/** JSON: an array is one record per element; an object is one section per top-level key. */
export const parseJson = (source: string): Parsed => {
  let value: unknown
  try {
    value = JSON.parse(source)
  } catch {
    throw new Unparseable("invalid_json", "The file is not valid JSON")
  }
  const builder = new ParsedBuilder()
  const record = (item: unknown) => {
    const lines: Array<string> = []
    render(item, "", lines)
    builder.add("record", lines.join("\n"))
  }
  if (Array.isArray(value)) {
    value.forEach(record)
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      builder.section(key)
      if (Array.isArray(item)) item.forEach(record)
      else record(item)
    }
  } else {
    record(value)
  }
  return builder.build()
}

/** RFC 4180 fields: quoted fields may hold commas, quotes ("") and line breaks. */
const csvRows = (source: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!
    if (quoted) {
      if (c === "\"" && source[i + 1] === "\"") {
        field += "\""
        i++
      } else if (c === "\"") {
        quoted = false
      } else {
        field += c
      }
    } else if (c === "\"") {
      quoted = true
    } else if (c === ",") {
      row.push(field)
      field = ""
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && source[i + 1] === "\n") i++
      row.push(field)
      rows.push(row)
      row = []
      field = ""
    } else {
      field += c
    }
  }
  if (field !== "" || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows.filter((r) => r.some((cell) => cell.trim() !== ""))
}

/** CSV with a header row: each row is a record of "column: value" pairs. */
export const parseCsv = (source: string): Parsed => {
  const [header, ...rows] = csvRows(source.replace(/^\uFEFF/, ""))
  if (header === undefined) throw new Unparseable("empty_csv", "The CSV file has no rows")
  const builder = new ParsedBuilder()
  for (const row of rows) {
    builder.add(
      "record",
      row.map((cell, i) => `${header[i]?.trim() || `column ${i + 1}`}: ${cell.trim()}`).join("\n")
    )
  }
  return builder.build()
}
