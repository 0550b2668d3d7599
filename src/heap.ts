/**
 * Start-up allocates far more than the service keeps (modules compiled, migrations, the model's probe), and V8
 * keeps the heap it grew to — its young generation at full size — until memory runs short, which on a machine
 * with room to spare is never. One collection that also shrinks the heap, when start-up is done, gives that
 * memory back (the service's thread's heap went from 218 to 77 MB, about 50 MB resident; docs/benchmarks.md
 * "Memory").
 *
 * The collection is V8's `gc`, which node installs in every thread when it starts with `--expose-gc` (`npm start`,
 * the image and the single binary do). Without the flag nothing is collected: the flag is never set at run time,
 * since changing V8's flags while its threads run is undefined behaviour (node's documentation of
 * `v8.setFlagsFromString`; docs/decisions.md).
 */
type Collect = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void

const collect = (globalThis as { gc?: Collect }).gc

/** A full collection that shrinks the heap of the calling thread (synchronous: tens of milliseconds). */
export const shrinkHeap = () => collect?.({ type: "major", execution: "sync", flavor: "last-resort" })

/**
 * The same collection a moment after start-up, off its critical path: the collection holds its thread for
 * 100–300 ms, which a first start would otherwise wait for before it answers ready. The timer keeps no thread alive.
 */
export const shrinkHeapSoon = (delayMs = 1000) => {
  if (collect !== undefined) setTimeout(shrinkHeap, delayMs).unref()
}
