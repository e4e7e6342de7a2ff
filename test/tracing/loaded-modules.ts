/**
 * Preloaded into a hookpost process by the tracing tests (NODE_OPTIONS=--import): when the
 * process exits it prints which @opentelemetry modules it loaded. They are all CommonJS, so
 * every one that was loaded, imported from ESM or required, is in the CommonJS module cache.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

process.on('exit', () => {
  const loaded = Object.keys(require.cache)
    .map((file) => /node_modules\/(@opentelemetry\/[^/]+)\//.exec(file)?.[1])
    .filter((name): name is string => name !== undefined);
  process.stderr.write(`OTEL_MODULES ${JSON.stringify([...new Set(loaded)].sort())}\n`);
});
