/**
 * Connection strings with several hosts (libpq's and postgres.js's form): DATABASE_URL accepts
 * them, hookpost describes them without the password, and asks for a writable session when the
 * URL lists several hosts and says nothing itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { isDatabaseUnavailable, sessionAttrsFor } from '../../src/db/connect.js';
import { describeDatabaseUrl, parseDatabaseUrl, withDatabase } from '../../src/db/url.js';

describe('database URLs', () => {
  it('parses a list of hosts, each with or without a port', () => {
    const u = parseDatabaseUrl('postgres://app:s%40cret@db1:5432,db2,[::1]:5433/hookpost?sslmode=require');
    assert.ok(u);
    assert.deepEqual(u.hosts, [
      { host: 'db1', port: '5432' },
      { host: 'db2', port: '' },
      { host: '[::1]', port: '5433' },
    ]);
    assert.equal(u.user, 'app');
    assert.equal(u.password, 's@cret');
    assert.equal(u.database, 'hookpost');
    assert.equal(u.params.get('sslmode'), 'require');
  });

  it('refuses what is not a postgres URL or has a bad host list', () => {
    for (const bad of [
      'mysql://x/db',
      'postgres://u@h1:5432,,h2/db',
      'postgres://u@h1:99999/db',
      'postgres://u@h1:port/db',
      'postgres://u@/db?x=%',
    ]) {
      assert.equal(parseDatabaseUrl(bad), undefined, bad);
    }
  });

  it('DATABASE_URL takes several hosts; a bad one names the variable, never the value', () => {
    const url = 'postgres://u:pw@h1:5432,h2:5433/db';
    assert.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url);
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://u:topsecret@h1:5432,:5/db' }),
      (e: Error) =>
        e instanceof ConfigError && /DATABASE_URL/.test(e.message) && !/topsecret/.test(e.message),
    );
  });

  it('describes a URL without its password; withDatabase keeps hosts and options', () => {
    assert.equal(describeDatabaseUrl('postgres://u:pw@h1:1,h2:2/db?x=1'), 'postgres://u@h1:1,h2:2/db');
    assert.equal(
      withDatabase('postgres://u:pw@h1:1,h2:2/db?target_session_attrs=primary', 'other'),
      'postgres://u:pw@h1:1,h2:2/other?target_session_attrs=primary',
    );
  });

  it('several hosts and no target_session_attrs: read-write; otherwise the URL decides', () => {
    assert.equal(sessionAttrsFor('postgres://u@h1:1,h2:2/db'), 'read-write');
    assert.equal(sessionAttrsFor('postgres://u@h1:1,h2:2/db?target_session_attrs=primary'), undefined);
    assert.equal(sessionAttrsFor('postgres://u@h1:1/db'), undefined);
  });

  it('a read-only session is an unavailable database (retry later), not a bad request', () => {
    const pg = (fields: object) => Object.assign(new Error('x'), { name: 'PostgresError' }, fields);
    assert.ok(isDatabaseUnavailable(pg({ code: '25006' })));
    assert.ok(
      isDatabaseUnavailable(
        pg({ code: 'XX000', message: 'cannot execute INSERT in a read-only transaction' }),
      ),
    );
    assert.ok(
      isDatabaseUnavailable(
        Object.assign(new Error('session is read-only'), { code: 'TARGET_SESSION_ATTRS' }),
      ),
    );
    assert.ok(!isDatabaseUnavailable(pg({ code: '23505' })));
  });
});
