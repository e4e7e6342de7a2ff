/** CLI entry: `hookpost <command> [options]`. Exit codes: 0 success, 1 failure, 2 bad usage. */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { connect } from './db/connect.js';
import { openDatabase } from './db/database.js';
import { migrate } from './db/migrate.js';
import { createLogger } from './log.js';
import { runRoles } from './roles.js';

const USAGE = `Usage: hookpost <command> [options]

Commands:
  start         API and dispatcher in one process (what \`npm start\` runs)
  api           the HTTP API alone
  dispatcher    the delivery workers alone (run as many as you like against one database)
  migrate       apply database migrations and exit

Options:
  -h, --help    show help for a command

Configuration comes from the environment; see README.md ("Configuration").`;

export class UsageError extends Error {}

/** Runs one CLI command and returns its exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  try {
    const { values } = parseArgs({
      args: rest,
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    const config = loadConfig();
    const log = createLogger(config.logLevel);
    switch (command) {
      case 'start':
        return await runRoles(config, log, { api: true, dispatcher: true });
      case 'api':
        return await runRoles(config, log, { api: true, dispatcher: false });
      case 'dispatcher':
        return await runRoles(config, log, { api: false, dispatcher: true });
      case 'migrate': {
        const database = await openDatabase(config, log);
        const sql = connect(database.url, { max: 2 });
        try {
          const applied = await migrate(sql);
          process.stdout.write(
            applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n',
          );
          return 0;
        } finally {
          await sql.end({ timeout: 5 });
          await database.stop();
        }
      }
      default:
        throw new UsageError(`unknown command: ${command}`);
    }
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`hookpost: ${(error as Error).message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`hookpost: configuration error: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
