/** What a parser makes of a document: its plain text and the structural blocks that tile it. */
export type BlockKind = "heading" | "paragraph" | "list_item" | "code" | "table" | "message" | "record"

export interface Block {
  readonly kind: BlockKind
  readonly text: string
  /** Character offsets of `text` in the document's plain text. */
  readonly start: number
  readonly end: number
  /** The headings (or page, sheet, key) this block sits under, outermost first. */
  readonly section_path: ReadonlyArray<string>
  readonly level?: number
  readonly speaker?: string
  readonly timestamp?: string
}

export interface Parsed {
  readonly text: string
  readonly blocks: ReadonlyArray<Block>
}

const blockSeparator = "\n\n"

const clean = (text: string) => text.replace(/\u0000/g, "").replace(/[ \t\f\v\r]+/g, " ").replace(/ *\n */g, "\n").trim()

/** Builds a Parsed document block by block, keeping offsets and the heading path consistent. */
export class ParsedBuilder {
  private readonly parts: Array<string> = []
  private readonly blocks: Array<Block> = []
  private length = 0
  private sections: Array<{ readonly level: number; readonly title: string }> = []
  private readonly basePath: ReadonlyArray<string>

  constructor(basePath: ReadonlyArray<string> = []) {
    this.basePath = basePath
  }

  get sectionPath(): ReadonlyArray<string> {
    return [...this.basePath, ...this.sections.map((section) => section.title)]
  }

  heading(level: number, raw: string): void {
    const title = clean(raw).replace(/\n/g, " ")
    if (title === "") return
    this.sections = [...this.sections.filter((section) => section.level < level), { level, title }]
    this.add("heading", title, { level })
  }

  /** Starts a new top-level section (a page, a sheet) without adding a heading block. */
  section(title: string): void {
    this.sections = [{ level: 0, title }]
  }

  add(kind: BlockKind, raw: string, extra: { level?: number; speaker?: string; timestamp?: string } = {}): void {
    const text = clean(raw)
    if (text === "") return
    const start = this.parts.length === 0 ? 0 : this.length + blockSeparator.length
    this.parts.push(text)
    this.length = start + text.length
    this.blocks.push({ kind, text, start, end: this.length, section_path: this.sectionPath, ...extra })
  }

  build(): Parsed {
    return { text: this.parts.join(blockSeparator), blocks: this.blocks }
  }
}
