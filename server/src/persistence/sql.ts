import type { Knex } from '@mikro-orm/knex';
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import type { Database } from './orm.js';

/**
 * The query builder for high-volume tables (snapshots, observations, polling state), which are read
 * and written in bulk rather than through the entity identity map. The helpers hide the two
 * dialects' storage of timestamps (SQLite: epoch milliseconds, as MikroORM stores them; PostgreSQL:
 * timestamptz), JSON (text vs jsonb) and booleans.
 */
export class Sql {
  readonly knex: Knex;
  readonly sqlite: boolean;

  constructor(readonly db: Database) {
    this.knex = (db.orm.em.getConnection() as unknown as AbstractSqlConnection).getKnex();
    this.sqlite = db.dialect === 'sqlite';
  }

  /** A timestamp as the dialect stores it. */
  ts(d: Date): number | Date {
    return this.sqlite ? d.getTime() : d;
  }

  tsOrNull(d: Date | null | undefined): number | Date | null {
    return d ? this.ts(d) : null;
  }

  /** A stored timestamp back to a Date. */
  date(v: unknown): Date | null {
    if (v === null || v === undefined) return null;
    if (v instanceof Date) return v;
    if (typeof v === 'number') return new Date(v);
    if (typeof v === 'string' && /^\d+$/.test(v)) return new Date(Number(v));
    return new Date(String(v));
  }

  iso(v: unknown): string | null {
    return this.date(v)?.toISOString() ?? null;
  }

  /** JSON for a json/jsonb column (pg would turn a bare array into a PostgreSQL array). */
  json(v: unknown): string {
    return JSON.stringify(v ?? null);
  }

  parseJson<T = unknown>(v: unknown): T {
    if (typeof v === 'string') return JSON.parse(v) as T;
    return v as T;
  }

  bool(v: unknown): boolean {
    return v === true || v === 1 || v === '1';
  }

  /** Numbers from bigint/numeric columns arrive as strings on PostgreSQL. */
  num(v: unknown): number | null {
    if (v === null || v === undefined) return null;
    return typeof v === 'number' ? v : Number(v);
  }
}
