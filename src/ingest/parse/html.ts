import { Readability } from "@mozilla/readability"
import { parseHTML } from "linkedom"
import { type Parsed, ParsedBuilder } from "../Parsed.ts"

const skipped = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "NAV", "FOOTER", "HEADER", "ASIDE", "FORM"])
const blockTags = new Set(["P", "LI", "PRE", "BLOCKQUOTE", "FIGCAPTION", "DT", "DD", "CAPTION", "TR"])

interface HtmlNode {
  readonly nodeType: number
  readonly tagName?: string
  readonly textContent: string | null
  readonly childNodes: ArrayLike<HtmlNode>
}

const kindOf = (tag: string) =>
  tag === "LI" ? "list_item" as const : tag === "PRE" ? "code" as const : tag === "TR" ? "table" as const : "paragraph" as const

const textOf = (node: HtmlNode, tag: string): string => {
  if (tag === "TR") {
    return Array.from(node.childNodes)
      .filter((cell) => cell.tagName === "TD" || cell.tagName === "TH")
      .map((cell) => (cell.textContent ?? "").trim())
      .join(" | ")
  }
  return node.textContent ?? ""
}

/** Walks the DOM in document order: h1–h6 open sections, block elements become blocks, loose text is kept. */
const walk = (root: HtmlNode, builder: ParsedBuilder) => {
  let loose: Array<string> = []
  const flushLoose = () => {
    if (loose.length > 0) builder.add("paragraph", loose.join(" "))
    loose = []
  }
  const visit = (node: HtmlNode) => {
    if (node.nodeType === 3) {
      if ((node.textContent ?? "").trim() !== "") loose.push(node.textContent!)
      return
    }
    if (node.nodeType !== 1) return
    const tag = node.tagName!.toUpperCase()
    if (skipped.has(tag)) return
    const heading = tag.match(/^H([1-6])$/)
    if (heading) {
      flushLoose()
      builder.heading(Number(heading[1]), node.textContent ?? "")
      return
    }
    if (blockTags.has(tag)) {
      const nestedBlocks = tag === "LI" && Array.from(node.childNodes).some((child) =>
        child.tagName !== undefined && ["UL", "OL", "P"].includes(child.tagName.toUpperCase())
      )
      if (!nestedBlocks) {
        flushLoose()
        builder.add(kindOf(tag), textOf(node, tag))
        return
      }
    }
    if (tag === "BR") {
      loose.push("\n")
      return
    }
    const isContainer = ["DIV", "SECTION", "ARTICLE", "MAIN", "BODY", "TABLE", "TBODY", "THEAD", "UL", "OL", "DL"]
      .includes(tag)
    if (isContainer) flushLoose()
    for (const child of Array.from(node.childNodes)) visit(child)
    if (isContainer) flushLoose()
  }
  visit(root)
  flushLoose()
}

/** An HTML fragment or page, as is (used for converted DOCX). */
export const parseHtmlFragment = (html: string): Parsed => {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`)
  const builder = new ParsedBuilder()
  walk(document.body as unknown as HtmlNode, builder)
  return builder.build()
}

/** A web page: Readability keeps the main content (no navigation, scripts or boilerplate); its title opens it. */
export const parseHtmlPage = (html: string): Parsed => {
  const { document } = parseHTML(html)
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0]).parse()
  if (article?.content) {
    const parsed = parseHtmlFragment(article.content)
    if (parsed.blocks.length > 0) return parsed
  }
  const builder = new ParsedBuilder()
  walk(parseHTML(html).document.body as unknown as HtmlNode, builder)
  return builder.build()
}
