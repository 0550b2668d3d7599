/**
 * Packed BM25 segments kept in the service's memory by row id, the least recently used given up first once they
 * hold more than `maxBytes`. A segment row is never changed (merges and compaction delete rows and insert new ones,
 * ids are never reused), so a kept copy is the row as long as the row exists; search asks for a segment only by an
 * id its own statement just found.
 */
export class SegmentCache {
  private readonly segments = new Map<string, Uint8Array>()
  private bytes = 0
  private readonly maxBytes: number

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }

  /** The segment, now the most recently used; undefined if not kept. */
  get(id: string): Uint8Array | undefined {
    const packed = this.segments.get(id)
    if (packed !== undefined) {
      this.segments.delete(id)
      this.segments.set(id, packed)
    }
    return packed
  }

  /** Keeps the segment (unless it alone exceeds the bound), giving up the least recently used beyond the bound. */
  set(id: string, packed: Uint8Array) {
    if (packed.byteLength > this.maxBytes || this.segments.has(id)) return
    this.segments.set(id, packed)
    this.bytes += packed.byteLength
    for (const [oldest, kept] of this.segments) {
      if (this.bytes <= this.maxBytes) break
      this.segments.delete(oldest)
      this.bytes -= kept.byteLength
    }
  }

  /** Bytes kept. */
  get size() {
    return this.bytes
  }
}
