import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Parsed } from "../../src/ingest/Parsed.ts"
import { detectFormat, parseDocument, Unparseable } from "../../src/ingest/parse/index.ts"
import { sampleFiles } from "../support/datasets.ts"

const read = (name: string) => new Uint8Array(Fs.readFileSync(Path.join(sampleFiles, name)))

const parseFile = (name: string) =>
  Effect.promise(async () => {
    const bytes = read(name)
    const detected = detectFormat(name, bytes)
    if ("unsupported" in detected) throw new Error(detected.unsupported)
    return parseDocument(detected.format, bytes)
  })

/** Every block's text is its slice of the document text, in order, without overlap. */
const assertTiled = (parsed: Parsed) => {
  let previousEnd = -1
  for (const block of parsed.blocks) {
    assert.strictEqual(parsed.text.slice(block.start, block.end), block.text)
    assert.isAbove(block.start, previousEnd)
    previousEnd = block.end
  }
}

describe("parsing real sample files", () => {
  it.effect("PDF: text per page, sections named by page", () =>
    Effect.gen(function*() {
      const zen = yield* parseFile("google-doc-document.pdf")
      assert.include(zen.text, "Example document")
      assert.include(zen.text, "Beautiful is better than ugly.")
      const pages = yield* parseFile("multi_page.pdf")
      assert.include(pages.text, "The Evolution of the Word Processor")
      assert.deepStrictEqual([...new Set(pages.blocks.map((b) => b.section_path[0]))], [
        "Page 1", "Page 2", "Page 3", "Page 4", "Page 5"
      ])
      assertTiled(pages)
    }))

  it.effect("an encrypted PDF fails permanently with a clear code", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.tryPromise(() => parseDocument("pdf", read("libreoffice-writer-password.pdf"))))
      const cause = error.cause as Unparseable
      assert.instanceOf(cause, Unparseable)
      assert.strictEqual(cause.code, "pdf_encrypted")
    }))

  it.effect("DOCX: headings become the section path, lists and tables become blocks", () =>
    Effect.gen(function*() {
      const numbered = yield* parseFile("unit_test_headers_numbered.docx")
      const paths = numbered.blocks.map((b) => b.section_path.join(" > "))
      assert.isTrue(paths.some((p) => /Section 1 > .*1\.1/.test(p) || p.startsWith("Section 1")))
      assert.isTrue(numbered.blocks.some((b) => b.kind === "heading"))
      const sample = yield* parseFile("word_sample.docx")
      assert.include(sample.text, "Summer activities")
      assert.isTrue(sample.blocks.some((b) => b.kind === "list_item"))
      assert.isTrue(sample.blocks.some((b) => b.kind === "table"))
      assertTiled(sample)
    }))

  it.effect("HTML: the main text without scripts, styles or navigation, sectioned by headings", () =>
    Effect.gen(function*() {
      const duck = yield* parseFile("wiki_duck.html")
      assert.include(duck.text, "Anseriformes")
      assert.notMatch(duck.text, /mw\.config|RLCONF|function\s*\(/)
      assert.isTrue(duck.blocks.some((b) => b.section_path.join(" > ") === "Behaviour > Feeding"))
      const words = duck.text.split(/\s+/).length
      assert.isTrue(words > 2500 && words < 6000, `${words} words`)
      assertTiled(duck)
    }))

  it.effect("Markdown: headings, paragraphs, and embedded HTML tables and lists", () =>
    Effect.gen(function*() {
      const ibm = yield* parseFile("wiki.md")
      assert.strictEqual(ibm.blocks[0]!.kind, "heading")
      assert.strictEqual(ibm.blocks[0]!.text, "IBM")
      const mixed = yield* parseFile("mixed.md")
      assert.isTrue(mixed.blocks.some((b) => b.kind === "table" && b.text.startsWith("Scrooge McDuck | Dagobert Duck")))
      assert.isTrue(mixed.blocks.some((b) => b.kind === "list_item" && b.text === "foo"))
      assert.notInclude(mixed.text, "<div")
      assertTiled(mixed)
    }))

  it.effect("JSON and CSV become records; invalid JSON fails permanently", () =>
    Effect.gen(function*() {
      const json = yield* Effect.promise(() =>
        parseDocument("json", new TextEncoder().encode(JSON.stringify([{ name: "Ada", born: 1815 }, { name: "Alan" }])))
      )
      assert.deepStrictEqual(json.blocks.map((b) => b.text), ["name: Ada\nborn: 1815", "name: Alan"])
      const csv = yield* Effect.promise(() =>
        parseDocument("csv", new TextEncoder().encode("name,quote\nAda,\"Hello, \"\"world\"\"\"\nAlan,Hi\n"))
      )
      assert.deepStrictEqual(csv.blocks.map((b) => b.text), ["name: Ada\nquote: Hello, \"world\"", "name: Alan\nquote: Hi"])
      const bad = yield* Effect.flip(Effect.tryPromise(() => parseDocument("json", new TextEncoder().encode("{nope"))))
      assert.strictEqual((bad.cause as Unparseable).code, "invalid_json")
    }))

  it.effect("file types are checked against content", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(detectFormat("a.pdf", read("google-doc-document.pdf")), { format: "pdf" })
      assert.property(detectFormat("fake.pdf", new TextEncoder().encode("hello")), "unsupported")
      assert.property(detectFormat("fake.docx", read("google-doc-document.pdf")), "unsupported")
      assert.property(detectFormat("binary.txt", read("google-doc-document.pdf")), "unsupported")
      assert.property(detectFormat("image.png", new Uint8Array([137, 80, 78, 71])), "unsupported")
      assert.deepStrictEqual(detectFormat("NOTES.MD", new TextEncoder().encode("# hi")), { format: "markdown" })
    }))
})
