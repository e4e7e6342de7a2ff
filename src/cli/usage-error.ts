/** Bad command-line usage: `hookpost` prints the message and the usage, and exits 2. */
export class UsageError extends Error {}
