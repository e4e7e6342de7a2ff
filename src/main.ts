/** CLI entry: `hookpost <command> [options]`. Exit codes: 0 success, 1 failure, 2 bad usage. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ListenError } from './api/serve.js';
import { runBench } from './bench/bench.js';
import { runFilterCost } from './bench/filter-cost.js';
import { runSoak } from './bench/soak.js';
import { type ApiKeysArgs, runApiKeys } from './cli/api-keys.js';
import { fanOutOption, partnerOption, positiveNumber } from './cli/bench-options.js';
import { withDatabase } from './cli/database.js';
import { runDeadLetters } from './cli/dead-letters.js';
import { runListen } from './cli/listen.js';
import { type ListenArgs, listenOptions } from './cli/listen-args.js';
import { runPurge } from './cli/purge.js';
import { runReplayCommand } from './cli/replay.js';
import { UsageError } from './cli/usage-error.js';
import { ConfigError, loadConfig } from './config.js';
import { DatabaseError } from './db/database.js';
import { migrate } from './db/migrate.js';
import { createLogger, terminalLogs } from './log.js';
import { runRoles } from './roles.js';
import { VERSION } from './version.js';

type Options = NonNullable<ParseArgsConfig['options']>;

interface Command {
  summary: string;
  usage: string;
  options: Options;
  /** Takes positional words (a sub-command, an id). */
  positionals?: boolean;
}

const COMMANDS: Record<string, Command> = {
  start: {
    summary: 'API and dispatcher in one process (what `npm start` runs)',
    usage: 'hookpost start',
    options: {},
  },
  api: { summary: 'the HTTP API alone', usage: 'hookpost api', options: {} },
  dispatcher: {
    summary: 'the delivery workers alone (run as many as you like against one database)',
    usage: 'hookpost dispatcher',
    options: {},
  },
  migrate: { summary: 'apply database migrations and exit', usage: 'hookpost migrate', options: {} },
  'dead-letters': {
    summary: 'dead letters per endpoint: counts, main error, pattern and what to do',
    usage:
      'hookpost dead-letters [--endpoint ID] [--hours 24]\n' +
      '  --endpoint ID  only this endpoint\n' +
      '  --hours N      how far back to look (default 24, at most 720)\n' +
      'Reads the database directly (DATABASE_URL, else the embedded one).',
    options: { endpoint: { type: 'string' }, hours: { type: 'string' } },
  },
  replay: {
    summary: "requeue an endpoint's dead letters, paced, with progress (audited)",
    usage:
      'hookpost replay --endpoint ID [--since T] [--until T] [--limit N] [--error-class C] [--status-code S] [--dry-run]\n' +
      '                [--include-delivered]\n' +
      '  --since, --until  when they died: 2026-05-01T10:00:00Z, 2026-05-01, or an age like 6h, 2d\n' +
      '  --limit N         at most N, oldest first\n' +
      '  --error-class C   only those whose last error was C (e.g. http_503, timeout)\n' +
      '  --status-code S   only those whose last answer was S\n' +
      '  --dry-run         count what would be replayed; change nothing\n' +
      '  --include-delivered  resend every delivery created in --since..--until, delivered ones\n' +
      '                    included, same webhook-ids (queued and in-flight ones are skipped)\n' +
      'Paced by HOOKPOST_REPLAY_BATCH_SIZE and HOOKPOST_REPLAY_RATE_PER_SECOND. Reads and writes the\n' +
      'database directly (DATABASE_URL, else the embedded one).',
    options: {
      endpoint: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
      'error-class': { type: 'string' },
      'status-code': { type: 'string' },
      'dry-run': { type: 'boolean' },
      'include-delivered': { type: 'boolean' },
    },
  },
  listen: {
    summary: "a local webhook receiver: verifies each delivery's signature and prints it (for development)",
    usage:
      'hookpost listen [--port 9000] [--host 127.0.0.1] [--subscribe TYPES [--api URL] | --secret whsec_…]\n' +
      '                [--status 200] [--delay-ms 0]\n' +
      '  --subscribe T  create an endpoint for this receiver in hookpost (or reuse the one a previous\n' +
      '                 listen made), subscribed to the event types T (comma-separated, * for all),\n' +
      '                 and verify with its secret; needs the admin token (HOOKPOST_ADMIN_TOKEN, else\n' +
      '                 .hookpost/admin-token of this folder)\n' +
      "  --api URL      hookpost's address for --subscribe (default http://127.0.0.1:8080, from PORT/HOST)\n" +
      "  --secret S     the endpoint's secret (from POST /v1/endpoints): each delivery is checked with the\n" +
      '                 Standard Webhooks verifier; without it (or --subscribe) signatures are not checked\n' +
      '  --status N     answer every delivery with N (e.g. 500: retried; 422: dead-lettered at once)\n' +
      '  --delay-ms N   wait N ms before answering (past HOOKPOST_REQUEST_TIMEOUT_MS: a timeout)\n' +
      '  --port N       port to receive on (default 9000)\n' +
      '  --host H       address to receive on (default 127.0.0.1)\n' +
      'Prints one line per delivery (time, webhook-id, event type, hookpost-sequence, verified or not,\n' +
      'size). hookpost refuses loopback endpoints unless started with HOOKPOST_ALLOW_PRIVATE_TARGETS=true.',
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      secret: { type: 'string' },
      subscribe: { type: 'string' },
      api: { type: 'string' },
      status: { type: 'string' },
      'delay-ms': { type: 'string' },
    },
  },
  'api-keys': {
    summary: 'create, list and revoke API keys (straight to the database)',
    usage:
      'hookpost api-keys create --name N --scope S [--scope S ...] [--tenant T] [--expires 30d] [--rate-limit R]\n' +
      'hookpost api-keys list\n' +
      'hookpost api-keys revoke ID\n' +
      '  --scope S       admin, endpoints:read, endpoints:write, deliveries:read, deliveries:write, replay\n' +
      '  --tenant T      bind the key to one tenant: it sees and changes only that tenant\n' +
      '  --expires A     an age (30d, 12h, 90m) or an ISO 8601 time\n' +
      '  --rate-limit R  at most R enqueued items per second across all API processes\n' +
      'Reads and writes the database directly (DATABASE_URL, else the embedded one).',
    options: {
      name: { type: 'string' },
      scope: { type: 'string', multiple: true },
      tenant: { type: 'string' },
      expires: { type: 'string' },
      'rate-limit': { type: 'string' },
    },
    positionals: true,
  },
  purge: {
    summary: 'run the retention pass once now (the dispatchers also run it) and print what it removed',
    usage:
      'hookpost purge [--dry-run]\n' +
      '  --dry-run  count what would be removed, erased and dropped; change nothing\n' +
      'Uses HOOKPOST_RETENTION_DAYS and HOOKPOST_PAYLOAD_RETENTION_DAYS. Reads and writes the database\n' +
      'directly (DATABASE_URL, else the embedded one).',
    options: { 'dry-run': { type: 'boolean' } },
  },
  bench: {
    summary: 'built-in load test: deliveries/s, lag, CPU per delivery per part, and the no-queue ceiling',
    usage:
      'hookpost bench [--n 20000] [--endpoints 10] [--payload-bytes 1024] [--rate R [--duration 10]] [--drain]\n' +
      '               [--ordering-keys K]\n' +
      '       hookpost bench --soak --rate R [--duration 600] [--retention-seconds S] [--csv soak.csv]\n' +
      '       hookpost bench (--fan-out | --filters | --filtered K) [--n 20000] [--endpoints 10] [--rate R]\n' +
      '       hookpost bench --filter-cost [--n 20000] [--rounds 6] [--payload-bytes 1024]\n' +
      '       hookpost bench --partner basic|oauth|https|mtls|proxy [--n 20000] [--endpoints 10]\n' +
      '  --rate R      offer a steady R deliveries/s and report lag percentiles at that rate\n' +
      '  --duration S  seconds of steady load with --rate (default 10)\n' +
      '  --drain       enqueue all first, then time the dispatcher on the backlog and sample its memory\n' +
      '  --ordering-keys K  item i gets ordering_key k(i % K): deliveries/s with K keys sent in order\n' +
      '  --soak        steady --rate for --duration with a short retention (default duration/5): prints\n' +
      '                database size, deliveries/s, lag p99, lock waits and dispatcher RSS every 10 s,\n' +
      '                writes them to --csv (default soak.csv) and an SVG chart beside it\n' +
      '  --fan-out     --n order events, each to every endpoint by subscription (CPU per event printed too)\n' +
      '  --filters     the same fan-out, half of the endpoints with a three-clause filter half the events match\n' +
      '  --filtered K  the same fan-out, K endpoints with that filter (--endpoints 100 --filtered 100: all)\n' +
      '  --filter-cost CPU per event of deciding content filters in PostgreSQL (jsonpath) and in the\n' +
      '                API process, interleaved over --rounds (needs PostgreSQL on this machine)\n' +
      '  --partner M   endpoints with Basic auth, OAuth2 (local oidc-provider, cached token), a private-CA\n' +
      '                HTTPS receiver, mTLS, or the dispatcher behind a local tinyproxy; no ceiling run\n' +
      '  --no-ceiling  skip the no-queue ceiling run (for interleaved runs against --partner)',
    options: {
      n: { type: 'string' },
      endpoints: { type: 'string' },
      'payload-bytes': { type: 'string' },
      rate: { type: 'string' },
      duration: { type: 'string' },
      drain: { type: 'boolean' },
      'ordering-keys': { type: 'string' },
      soak: { type: 'boolean' },
      'retention-seconds': { type: 'string' },
      csv: { type: 'string' },
      'filter-cost': { type: 'boolean' },
      'fan-out': { type: 'boolean' },
      filters: { type: 'boolean' },
      filtered: { type: 'string' },
      rounds: { type: 'string' },
      partner: { type: 'string' },
      'no-ceiling': { type: 'boolean' },
    },
  },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)}  ${c.summary}`);
  return (
    `Usage: hookpost <command> [options]   (hookpost --version: the version)\n\nCommands:\n${lines.join('\n')}\n\n` +
    'Run `hookpost <command> --help` for its options. Configuration comes from the environment;\n' +
    'see docs/configuration.md.'
  );
}

/** One command's help: what it does first, then its synopsis and options. */
function commandHelp(name: string, command: Command): string {
  return `hookpost ${name} — ${command.summary}\n\nUsage: ${command.usage}`;
}

/** Runs one CLI command and returns its exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`hookpost ${VERSION}\n`);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  try {
    if (!command) throw new UsageError(`unknown command: ${name}`);
    const { values, positionals } = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: command.positionals === true,
    }) as { values: Record<string, string | boolean | undefined>; positionals: string[] };
    if (values.help) {
      process.stdout.write(`${commandHelp(name, command)}\n`);
      return 0;
    }
    if (name === 'listen') {
      // A receiver for local development: only --subscribe reads hookpost's configuration.
      return await runListen(await listenOptions(values as ListenArgs, () => loadConfig()));
    }
    const config = loadConfig();
    const readable = terminalLogs(config);
    const log = createLogger(config.logLevel, readable);
    switch (name) {
      case 'start':
        return await runRoles(config, log, { api: true, dispatcher: true });
      case 'api':
        return await runRoles(config, log, { api: true, dispatcher: false });
      case 'dispatcher':
        return await runRoles(config, log, { api: false, dispatcher: true });
      case 'bench':
        if (values['filter-cost'] === true) {
          return await runFilterCost(config, createLogger('warn'), {
            n: positiveNumber(values, 'n', 20000),
            rounds: positiveNumber(values, 'rounds', 6),
            payloadBytes: positiveNumber(values, 'payload-bytes', 1024),
          });
        }
        if (values.soak === true) {
          return await runSoak({ ...config, allowPrivateTargets: true }, createLogger('warn', readable), {
            rate: positiveNumber(values, 'rate', 100, false),
            durationSeconds: positiveNumber(values, 'duration', 600, false),
            endpoints: positiveNumber(values, 'endpoints', 10),
            payloadBytes: positiveNumber(values, 'payload-bytes', 1024),
            retentionSeconds:
              values['retention-seconds'] === undefined
                ? undefined
                : positiveNumber(values, 'retention-seconds', 0, false),
            csvPath: typeof values.csv === 'string' ? values.csv : 'soak.csv',
          });
        }
        return await runBench({ ...config, allowPrivateTargets: true }, createLogger('warn', readable), {
          n: positiveNumber(values, 'n', 20000),
          endpoints: positiveNumber(values, 'endpoints', 10),
          payloadBytes: positiveNumber(values, 'payload-bytes', 1024),
          rate: values.rate === undefined ? undefined : positiveNumber(values, 'rate', 0, false),
          durationSeconds: positiveNumber(values, 'duration', 10, false),
          drain: values.drain === true,
          orderingKeys:
            values['ordering-keys'] === undefined ? undefined : positiveNumber(values, 'ordering-keys', 1),
          fanOut: fanOutOption(values),
          partner: partnerOption(values.partner),
          noCeiling: values['no-ceiling'] === true,
        });
      case 'dead-letters':
        return await runDeadLetters(config, values as { endpoint?: string; hours?: string });
      case 'replay':
        return await runReplayCommand(config, values);
      case 'api-keys':
        return await runApiKeys(
          config,
          positionals[0],
          positionals.slice(1),
          values as unknown as ApiKeysArgs,
        );
      case 'purge':
        return await runPurge(config, values);
      default: {
        const applied = await withDatabase(config, (sql) => migrate(sql), { requireSchema: false, log });
        process.stdout.write(
          applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n',
        );
        return 0;
      }
    }
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      // A mistake in one command's options gets that command's help, not the list of commands.
      const help = command ? commandHelp(name, command) : usage();
      process.stderr.write(`hookpost: ${(error as Error).message}\n\n${help}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`hookpost: configuration error: ${error.message}\n`);
      return 1;
    }
    if (error instanceof ListenError || error instanceof DatabaseError) {
      process.stderr.write(`hookpost: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
