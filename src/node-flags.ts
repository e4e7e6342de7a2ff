/**
 * The node flags hookpost's own processes run with: `npm start`, the Docker image's ENTRYPOINT and
 * the API and dispatcher processes `hookpost bench` starts (test/deploy/node-flags.test.ts keeps
 * the three in step). Flags, not code: V8 reads them when the heap is set up, and setting
 * --single-threaded-gc later (v8.setFlagsFromString) aborts the process at the next collection.
 *
 * --single-threaded-gc: V8 otherwise spreads each young-generation collection over helper
 * threads. hookpost is throughput work that shares a few cores with PostgreSQL, where those
 * threads cost more CPU than they save in pause time: a loop allocating mid-lived objects spent
 * 3.1 – 3.4 s of CPU single-threaded against 4.2 – 4.4 s (pauses grow from ~5 to ~10 ms); in
 * interleaved `bench` sets the API and dispatchers spent 2 – 3% less per delivery
 * (docs/performance.md).
 */
export const NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];
