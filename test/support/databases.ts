import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * The databases every persistence-touching suite runs against: SQLite always, PostgreSQL when
 * TEST_DATABASE_URL is set (CI sets it). Each server gets a database of its own, dropped afterwards.
 */
export interface TestDatabase {
  name: 'sqlite' | 'postgresql';
  /** Creates an empty database; returns the env that points the server at it. */
  create(): Promise<{ env: Record<string, string>; dataDir: string; drop(): Promise<void> }>;
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'um-test-'));
}

const sqlite: TestDatabase = {
  name: 'sqlite',
  async create() {
    const dataDir = tempDir();
    return { env: { DATA_DIR: dataDir }, dataDir, drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  },
};

function postgres(adminUrl: string): TestDatabase {
  return {
    name: 'postgresql',
    async create() {
      const dbName = `um_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`create database "${dbName}"`);
      } finally {
        await admin.end();
      }
      const url = new URL(adminUrl);
      url.pathname = `/${dbName}`;
      const dataDir = tempDir();
      return {
        env: { DATABASE_URL: url.toString(), DATA_DIR: dataDir },
        dataDir,
        drop: async () => {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          try {
            await c.query(`drop database if exists "${dbName}" with (force)`);
          } finally {
            await c.end();
          }
          fs.rmSync(dataDir, { recursive: true, force: true });
        },
      };
    },
  };
}

export function testDatabases(): TestDatabase[] {
  const url = process.env.TEST_DATABASE_URL;
  return url ? [sqlite, postgres(url)] : [sqlite];
}
