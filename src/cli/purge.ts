/** `hookpost purge [--dry-run]`: the retention pass once, now, straight to the database. */
import type { Config } from '../config.js';
import type { RetentionReport } from '../retention/pass.js';
import { runRetentionPass } from '../retention/pass.js';
import { retentionPolicy } from '../retention/schedule.js';
import { plural } from '../util/plural.js';
import { withDatabase } from './database.js';

export function formatReport(report: RetentionReport, config: Config): string {
  const verb = report.dryRun ? 'would remove' : 'removed';
  const lines = [
    `Retention: ${plural(config.retentionDays, 'day')} (payloads ${plural(config.payloadRetentionDays, 'day')})${report.dryRun ? ', dry run: nothing changed' : ''}`,
    `  deliveries ${verb}:  ${report.deliveriesRemoved}`,
    `  messages ${verb}:    ${report.messagesRemoved}`,
    `  payloads ${report.dryRun ? 'would expire' : 'expired'}:   ${report.payloadsExpired}`,
  ];
  if (!report.dryRun) lines.push(`  response snippets erased: ${report.snippetsErased}`);
  lines.push(
    `  attempt partitions ${report.dryRun ? 'to drop' : 'dropped'}: ${report.partitionsDropped.length}`,
  );
  for (const p of report.partitionsDropped) lines.push(`    ${p.name}  (~${plural(p.rows, 'attempt')})`);
  if (report.partitionsCreated.length > 0)
    lines.push(`  attempt partitions created: ${report.partitionsCreated.join(', ')}`);
  if (!report.dryRun) lines.push(`  took ${(report.durationMs / 1000).toFixed(1)} s`);
  return `${lines.join('\n')}\n`;
}

export async function runPurge(
  config: Config,
  args: { 'dry-run'?: boolean | string | undefined },
): Promise<number> {
  const dryRun = args['dry-run'] === true;
  return withDatabase(config, async (sql) => {
    const outcome = await runRetentionPass(sql, retentionPolicy(config), { dryRun, force: true });
    if (!outcome.ran) {
      process.stderr.write(
        'hookpost: a retention pass is running in another process right now; try again later\n',
      );
      return 1;
    }
    process.stdout.write(formatReport(outcome.report, config));
    return 0;
  });
}
