import { type Parsed, ParsedBuilder } from "../Parsed.ts"
import { parseHtmlFragment } from "./html.ts"

const stripInline = (line: string) =>
  line
    .replace(/<[^>]+>/g, " ")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|__|`)/g, "")

/** Markdown (CommonMark-ish): headings open sections; paragraphs, list items, tables and code are blocks. */
export const parseMarkdown = (source: string): Parsed => {
  const builder = new ParsedBuilder()
  const lines = source.replace(/\r\n?/g, "\n").split("\n")
  let paragraph: Array<string> = []
  const flush = () => {
    if (paragraph.length > 0) builder.add("paragraph", paragraph.map(stripInline).join("\n"))
    paragraph = []
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fence = line.match(/^\s*(```|~~~)/)
    if (fence) {
      flush()
      const code: Array<string> = []
      while (++i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!)) code.push(lines[i]!)
      builder.add("code", code.join("\n"))
      continue
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/)
    if (heading) {
      flush()
      builder.heading(heading[1]!.length, stripInline(heading[2]!))
      continue
    }
    if (/^\s*\|.*\|\s*$/.test(line)) {
      flush()
      const rows: Array<string> = []
      for (; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]!); i++) {
        if (!/^\s*\|[\s:|-]+\|\s*$/.test(lines[i]!)) {
          rows.push(lines[i]!.trim().replace(/^\||\|$/g, "").split("|").map((cell) => stripInline(cell).trim()).join(" | "))
        }
      }
      i--
      builder.add("table", rows.join("\n"))
      continue
    }
    if (/^<[a-zA-Z][^>]*>/.test(line)) {
      flush()
      const html: Array<string> = []
      for (; i < lines.length && lines[i]!.trim() !== ""; i++) html.push(lines[i]!)
      for (const block of parseHtmlFragment(html.join("\n")).blocks) builder.add(block.kind, block.text)
      continue
    }
    const item = line.match(/^\s*(?:[-*+]|\d+[.)])\s+(.*)$/)
    if (item) {
      flush()
      builder.add("list_item", stripInline(item[1]!))
      continue
    }
    if (line.trim() === "") {
      flush()
      continue
    }
    paragraph.push(line)
  }
  flush()
  return builder.build()
}

/** Plain text: paragraphs separated by blank lines. */
export const parsePlainText = (source: string): Parsed => {
  const builder = new ParsedBuilder()
  for (const paragraph of source.replace(/\r\n?/g, "\n").split(/\n\s*\n/)) builder.add("paragraph", paragraph)
  return builder.build()
}
