import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, SettingsError, PluginLoadError, EncryptionKeyError } from '@usage-monitor/server';
import { testDatabases } from '../support/databases.js';
import { api, createToken, setupAdmin, startTestServer } from '../support/server.js';

const KEY = 'sk-or-v1-restart-test-key-0000000000';
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

for (const db of testDatabases()) {
  describe(`restart and encryption key (${db.name})`, () => {
    test('a restart keeps sessions, tokens and connections', async () => {
      let server = await startTestServer(db);
      try {
        const admin = await setupAdmin(server);
        const token = await createToken(server, admin, ['configs:read']);
        const created = await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, label: 'Kept' } });
        assert.equal(created.status, 201);
        server = await server.restart();
        assert.equal(server.setupCode, null, 'no new setup code once a password is set');
        const list = await api(server, 'GET', '/configs', { token: admin });
        assert.equal(list.status, 200, 'the session survived the restart');
        assert.deepEqual(list.body.map((c: { label: string }) => c.label), ['Kept']);
        assert.equal((await api(server, 'GET', '/configs', { token })).status, 200, 'the API token survived');
        const svc = server.running.services.connections;
        assert.deepEqual(svc.credentialsOf(await svc.get(created.body.id)), { api_key: KEY }, 'credentials decrypt after restart');
      } finally {
        await server.close();
      }
    });

    test('a different encryption key is refused with a clear message, and nothing is changed', async () => {
      let server = await startTestServer(db);
      try {
        const admin = await setupAdmin(server);
        await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY } });
        const otherKey = crypto.randomBytes(32).toString('hex');
        await assert.rejects(server.restart({ ENCRYPTION_KEY: otherKey }), (err: Error) => {
          assert.ok(err instanceof EncryptionKeyError);
          assert.match(err.message, /not the key that encrypted the stored credentials/);
          assert.ok(!err.message.includes(otherKey), 'the key itself is never printed');
          return true;
        });
        // The original key still works: nothing was re-encrypted or lost.
        server = await server.restart();
        const svc = server.running.services.connections;
        const [c] = await svc.list();
        assert.deepEqual(svc.credentialsOf(await svc.get(c!.id)), { api_key: KEY });
      } finally {
        await server.close();
      }
    });

    test('without ENCRYPTION_KEY a key file is generated (0600) and reused; losing it stops startup', async () => {
      let server = await startTestServer(db, { env: { ENCRYPTION_KEY: '' } });
      try {
        const keyFile = path.join(server.env.DATA_DIR!, 'secret.key');
        assert.ok(fs.existsSync(keyFile));
        assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
        assert.ok(server.logs.text().includes('Generated a new credential encryption key'));
        const admin = await setupAdmin(server);
        await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY } });
        server = await server.restart();
        assert.equal((await api(server, 'GET', '/configs', { token: admin })).body.length, 1);
        await server.running.close();
        fs.renameSync(keyFile, `${keyFile}.moved`);
        await assert.rejects(server.restart(), /neither ENCRYPTION_KEY nor .*secret\.key is present/);
        fs.renameSync(`${keyFile}.moved`, keyFile);
        server = await server.restart();
      } finally {
        await server.close();
      }
    });
  });
}

describe('startup validation', () => {
  const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'um-start-'));
  const base = () => ({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: tmp() });

  test('a bad setting stops startup with a message naming the variable', async () => {
    const bad: Array<[string, string]> = [
      ['PORT', 'eighty'],
      ['PORT', '70000'],
      ['AUTO_POLL_ENABLED', 'maybe'],
      ['AUTO_POLL_INTERVAL_MINUTES', '0'],
      ['AUTO_POLL_INTERVAL_MINUTES', 'hourly'],
      ['REQUEST_TIMEOUT_SECONDS', '1.5'],
      ['DATABASE_URL', 'mysql://localhost/db'],
      ['LOG_LEVEL', 'loud'],
      ['CORS_ORIGINS', 'not an origin'],
      ['TRUST_PROXY', 'sometimes'],
      ['ENCRYPTION_KEY', 'too-short'],
    ];
    for (const [name, value] of bad) {
      await assert.rejects(startServer({ env: { ...base(), [name]: value } }), (err: Error) => {
        assert.ok(err instanceof SettingsError || err instanceof EncryptionKeyError, `${name}: ${err.name}`);
        assert.ok(err.message.includes(name), `${name}: "${err.message}" must name the variable`);
        return true;
      });
    }
  });

  test('a missing, broken or incompatible plugin stops startup naming the package', async () => {
    const cases: Array<[string, RegExp]> = [
      ['@usage-monitor/provider-does-not-exist', /Plugin @usage-monitor\/provider-does-not-exist: package not found/],
      [path.join(fixtures, 'plugin-bad-metric.mjs'), /plugin-bad-metric\.mjs: metrics\/Things\/type must be one of/],
      [path.join(fixtures, 'plugin-future-api.mjs'), /plugin-future-api\.mjs: apiVersion 2 is not supported/],
      ['@usage-monitor/provider-openrouter,@usage-monitor/provider-openrouter', /already used by/],
    ];
    for (const [plugins, expected] of cases) {
      await assert.rejects(startServer({ env: { ...base(), PLUGINS: plugins } }), (err: Error) => {
        assert.ok(err instanceof PluginLoadError, err.message);
        assert.match(err.message, expected);
        return true;
      });
    }
  });

  test('PLUGINS selects which plugins load', async () => {
    const running = await startServer({ env: { ...base(), PLUGINS: '@usage-monitor/provider-openrouter' } });
    try {
      const res = await api({ url: running.url! }, 'GET', '/providers');
      assert.deepEqual(res.body.map((p: { id: string }) => p.id), ['openrouter']);
    } finally {
      await running.close();
    }
  });
});
