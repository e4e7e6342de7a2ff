/**
 * An operator command run in a folder that has no database, while another folder's hookpost runs
 * its embedded PostgreSQL on the port this one would use: every command says there is no database
 * here and names DATABASE_URL and HOOKPOST_DATA_DIR, never "password authentication failed", and
 * creates nothing. The "other hookpost's server" is the real PostgreSQL this test run uses,
 * reached through HOOKPOST_EMBEDDED_PG_PORT.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers.js';
import { runHookpost } from './process.js';

describe('operator commands without a database where they look', () => {
  let db: TestDatabase;
  let folder: string;
  before(async () => {
    db = await createTestDatabase(false);
    folder = await mkdtemp(path.join(os.tmpdir(), 'hookpost-elsewhere-'));
  });
  after(async () => {
    await db.drop();
    await rm(folder, { recursive: true, force: true });
  });

  it('say so, name DATABASE_URL and HOOKPOST_DATA_DIR, and create nothing', async () => {
    const dataDir = path.join(folder, '.hookpost');
    const env = { HOOKPOST_DATA_DIR: dataDir, HOOKPOST_EMBEDDED_PG_PORT: new URL(db.url).port || '5432' };
    for (const args of [
      ['dead-letters'],
      ['replay', '--endpoint', 'ep_x', '--dry-run'],
      ['api-keys', 'list'],
      ['purge', '--dry-run'],
      ['migrate'],
    ]) {
      const proc = runHookpost(args, env);
      const code = await proc.exited;
      const output = proc.output();
      assert.equal(code, 1, `${args[0]}: ${output}`);
      assert.match(output, /no hookpost database found: DATABASE_URL is unset and there is none in/, args[0]);
      assert.match(output, /belongs to a hookpost started in another folder/);
      assert.match(output, /HOOKPOST_DATA_DIR/);
      assert.doesNotMatch(output, /password authentication failed/);
      assert.equal(existsSync(dataDir), false, `${args[0]} left a data dir behind`);
    }
  });
});
