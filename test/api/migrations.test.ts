import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, migrate } from '@usage-monitor/server';
import { testDatabases } from '../support/databases.js';

for (const db of testDatabases()) {
  describe(`migrations (${db.name})`, () => {
    test('the migrations build exactly the schema the entities describe', async () => {
      const created = await db.create();
      const database = await openDatabase({ databaseUrl: created.env.DATABASE_URL ?? null, dataDir: created.dataDir });
      try {
        await migrate(database);
        // `safe` leaves out drops: the polling tables are written with the query builder and have no entities.
        const diff = await database.orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false, safe: true });
        assert.equal(diff.trim(), '', `entities and migrations disagree:\n${diff}`);
      } finally {
        await database.close();
        await created.drop();
      }
    });

    test('an upgrade from the first migration keeps existing data; migrating twice changes nothing', async () => {
      const created = await db.create();
      const database = await openDatabase({ databaseUrl: created.env.DATABASE_URL ?? null, dataDir: created.dataDir });
      try {
        const migrator = database.orm.getMigrator();
        await migrator.up({ to: 'Migration20261121000001' });
        const conn = database.em().getConnection();
        const now = database.dialect === 'sqlite' ? Date.now() : new Date();
        await conn.execute(
          'insert into connection (provider, label, credentials, base_url, settings, is_enabled, is_visible, display_order, alert_thresholds, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          ['openrouter', 'Before upgrade', 'v1.x.y.z', null, '{}', true, true, 0, '[]', now, now],
        );
        const applied = await migrate(database);
        assert.deepEqual(applied, ['Migration20261121000002']);
        const rows = (await conn.execute('select label from connection')) as Array<{ label: string }>;
        assert.deepEqual(rows.map((r) => r.label), ['Before upgrade']);
        assert.deepEqual(await migrate(database), [], 'nothing left to apply');
      } finally {
        await database.close();
        await created.drop();
      }
    });
  });
}
