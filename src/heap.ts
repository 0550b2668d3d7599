/**
 * Start-up allocates far more than the service keeps (modules compiled, migrations, the model's probe), and V8
 * keeps the heap it grew to — its young generation at full size — until memory runs short, which on a machine
 * with room to spare is never. One collection that also shrinks the heap, when start-up is done, gives that
 * memory back (the service's thread's heap went from 218 to 77 MB, about 50 MB resident; docs/benchmarks.md
 * "Memory").
 */
import * as V8 from "node:v8"
import * as Vm from "node:vm"

type Collect = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void

let collect: Collect | undefined

/** A full collection that shrinks the heap of the calling thread (synchronous: tens of milliseconds). */
export const shrinkHeap = () => {
  if (collect === undefined) {
    // `gc` is installed in contexts made after the flag is set: a fresh one hands it over.
    V8.setFlagsFromString("--expose-gc")
    collect = Vm.runInNewContext("gc") as Collect
  }
  collect({ type: "major", execution: "sync", flavor: "last-resort" })
}

/**
 * The same collection a moment after start-up, off its critical path: the collection holds its thread for
 * 100–300 ms, which a first start would otherwise wait for before it answers ready. The timer keeps no thread alive.
 */
export const shrinkHeapSoon = (delayMs = 1000) => {
  setTimeout(shrinkHeap, delayMs).unref()
}
