import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM as BaseORM, Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import type { EntityManager as KnexEntityManager } from '@mikro-orm/knex';
import { entities } from './entities/index.js';
import { sqliteMigrations } from './migrations/sqlite/index.js';
import { postgresqlMigrations } from './migrations/postgresql/index.js';

export type Dialect = 'sqlite' | 'postgresql';

export interface Database {
  orm: BaseORM;
  dialect: Dialect;
  /** A fresh EntityManager fork; one per request or unit of work. */
  em(): KnexEntityManager;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Logs every SQL statement through this function (tests count statements with it). */
  onQuery?: (sql: string) => void;
}

/** Opens the database named by the settings: PostgreSQL for postgres:// URLs, else SQLite in DATA_DIR. */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const common: Partial<Options> = {
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: false },
    debug: false,
  };
  let orm: BaseORM;
  let dialect: Dialect;
  if (opts.databaseUrl) {
    dialect = 'postgresql';
    // Drivers are imported on demand: a SQLite install never loads the PostgreSQL client, and back.
    const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql');
    orm = await PostgresORM.init({
      ...common,
      clientUrl: opts.databaseUrl,
      pool: { min: 0, max: 10 },
      migrations: { migrationsList: postgresqlMigrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    } as Parameters<typeof PostgresORM.init>[0]);
  } else {
    dialect = 'sqlite';
    fs.mkdirSync(opts.dataDir, { recursive: true });
    const { MikroORM: SqliteORM } = await import('@mikro-orm/better-sqlite');
    orm = await SqliteORM.init({
      ...common,
      dbName: path.join(opts.dataDir, 'usage-monitor.db'),
      // WAL lets readers proceed while the poller writes; foreign keys are off by default in SQLite.
      migrations: { migrationsList: sqliteMigrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    } as Parameters<typeof SqliteORM.init>[0]);
    const conn = orm.em.getConnection() as unknown as { execute(sql: string): Promise<unknown> };
    await conn.execute('pragma journal_mode = wal');
    await conn.execute('pragma foreign_keys = on');
    await conn.execute('pragma busy_timeout = 5000');
    await conn.execute('pragma synchronous = normal');
  }
  if (opts.onQuery) {
    // Every statement, from entities and from the query builder alike, passes through knex.
    const knex = (orm.em.getConnection() as unknown as { getKnex(): { on(e: 'query', f: (q: { sql: string }) => void): void } }).getKnex();
    knex.on('query', (q) => opts.onQuery!(q.sql));
  }
  return {
    orm,
    dialect,
    em: () => orm.em.fork() as unknown as KnexEntityManager,
    close: () => orm.close(true),
  };
}

/** Applies pending migrations. An upgrade keeps existing data: migrations only add. */
export async function migrate(db: Database): Promise<string[]> {
  const migrator = db.orm.getMigrator();
  const applied = await migrator.up();
  return applied.map((m) => m.name);
}
