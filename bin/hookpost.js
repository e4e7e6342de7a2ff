#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`).
import { main } from '../dist/src/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
