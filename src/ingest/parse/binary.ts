import mammoth from "mammoth"
import { extractText, getDocumentProxy } from "unpdf"
import { type Parsed, ParsedBuilder } from "../Parsed.ts"
import { parseHtmlFragment } from "./html.ts"

/** Why a file cannot be parsed; it will not parse on a retry either. */
export class Unparseable extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** PDF text per page (pdf.js via unpdf); each page is a section, its paragraphs the blocks. */
export const parsePdf = async (bytes: Uint8Array): Promise<Parsed> => {
  let pages: ReadonlyArray<string>
  try {
    const pdf = await getDocumentProxy(new Uint8Array(bytes))
    pages = (await extractText(pdf, { mergePages: false })).text
  } catch (error) {
    const name = (error as { name?: string }).name
    if (name === "PasswordException") {
      throw new Unparseable("pdf_encrypted", "The PDF is password-protected; upload an unprotected copy")
    }
    throw new Unparseable("pdf_unreadable", "The file could not be read as a PDF")
  }
  const builder = new ParsedBuilder()
  pages.forEach((page, index) => {
    builder.section(`Page ${index + 1}`)
    for (const paragraph of page.split(/\n\s*\n/)) builder.add("paragraph", paragraph)
  })
  const parsed = builder.build()
  if (parsed.blocks.length === 0) {
    throw new Unparseable("pdf_no_text", "The PDF has no extractable text (a scan without a text layer?)")
  }
  return parsed
}

/** DOCX through mammoth's semantic HTML (headings, lists, tables), then the HTML walker. */
export const parseDocx = async (bytes: Uint8Array): Promise<Parsed> => {
  let html: string
  try {
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes) })).value
  } catch {
    throw new Unparseable("docx_unreadable", "The file could not be read as a DOCX document")
  }
  return parseHtmlFragment(html)
}
