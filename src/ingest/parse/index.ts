import type { Parsed } from "../Parsed.ts"
import { asText, type Format } from "./formats.ts"
import { parseDocx, parsePdf, Unparseable } from "./binary.ts"
import { parseHtmlPage } from "./html.ts"
import { parseMarkdown, parsePlainText } from "./markdown.ts"
import { type Message, parseMessages } from "./messages.ts"
import { parseCsv, parseJson } from "./structured.ts"

export { Unparseable }
export { detectFormat, type Format, mimeTypes, supportedExtensions } from "./formats.ts"

/** Parses stored original bytes. Throws Unparseable for content that will never parse. */
export const parseDocument = async (format: Format, bytes: Uint8Array): Promise<Parsed> => {
  if (format === "pdf") return parsePdf(bytes)
  if (format === "docx") return parseDocx(bytes)
  const text = asText(bytes)
  if (text === undefined) throw new Unparseable("not_utf8", "The file is not UTF-8 text")
  switch (format) {
    case "text":
      return parsePlainText(text)
    case "markdown":
      return parseMarkdown(text)
    case "html":
      return parseHtmlPage(text)
    case "json":
      return parseJson(text)
    case "csv":
      return parseCsv(text)
    case "messages":
      return parseMessages(JSON.parse(text) as ReadonlyArray<Message>)
  }
}
