import type { Knex } from '@mikro-orm/knex';
import type { ErrorCode, Metric, ObservationDraft, UsageSnapshot } from '@usage-monitor/core';
import { Sql } from './sql.js';
import type { Database } from './orm.js';

export interface SnapshotInsert {
  connectionId: number;
  provider: string;
  status: 'healthy' | 'degraded' | 'error';
  summary: string;
  metrics: Metric[];
  raw: unknown;
  errorCode: ErrorCode | null;
  errorMessage: string | null;
  checkedAt: Date;
  durationMs: number | null;
}

export interface PollOutcome {
  snapshot: SnapshotInsert;
  observations: ObservationDraft[];
  /** Re-encrypted rotated credentials to store with the snapshot, atomically. */
  encryptedCredentials?: string;
  nextPollAt: Date;
  backoffUntil: Date | null;
  /** The poll lease holder: the lease is released in the same statement as the state update (if still theirs). */
  leaseOwner?: string;
}

/** One row of GET /usage: connection, polling state and both snapshot pointers, from one query. */
export interface UsageRow {
  connection: Record<string, unknown>;
  state: {
    lastAttemptAt: Date | null;
    lastSuccessAt: Date | null;
    lastFailureAt: Date | null;
    consecutiveFailures: number;
    nextPollAt: Date | null;
    backoffUntil: Date | null;
  };
  latest: StoredSnapshot | null;
  lastGood: StoredSnapshot | null;
}

/** A snapshot's fields except `raw`. */
export type SnapshotHead = Omit<UsageSnapshot, 'raw'>;

/**
 * A stored snapshot as GET /usage reads it: every field parsed but `raw`, which stays the JSON text
 * the database returned (it is most of a snapshot's size and only ever passed through). Snapshots
 * are never changed once written, so one read stays valid and is kept by id (see SnapshotCache).
 */
export class StoredSnapshot {
  private serialized: Buffer | undefined;

  constructor(
    readonly head: SnapshotHead,
    /** `raw` as JSON text (`{}` for a stored null, as toSnapshot gives). */
    readonly rawJson: string,
  ) {}

  /** The snapshot as toSnapshot returns it (a new object, raw parsed). */
  toSnapshot(): UsageSnapshot {
    const h = this.head;
    return {
      id: h.id,
      provider_config_id: h.provider_config_id,
      provider: h.provider,
      status: h.status,
      summary: h.summary,
      metrics: structuredClone(h.metrics), // the cached snapshot stays as read
      raw: JSON.parse(this.rawJson) as unknown,
      error: h.error,
      error_code: h.error_code,
      checked_at: h.checked_at,
      duration_ms: h.duration_ms,
    };
  }

  /**
   * UTF-8 JSON with the same value and key order as `JSON.stringify(this.toSnapshot())`, built
   * without parsing raw, once.
   */
  json(): Buffer {
    if (this.serialized === undefined) {
      const h = this.head;
      const before = JSON.stringify({ id: h.id, provider_config_id: h.provider_config_id, provider: h.provider, status: h.status, summary: h.summary, metrics: h.metrics });
      const after = JSON.stringify({ error: h.error, error_code: h.error_code, checked_at: h.checked_at, duration_ms: h.duration_ms });
      this.serialized = Buffer.from(`${before.slice(0, -1)},"raw":${this.rawJson},${after.slice(1)}`);
    }
    return this.serialized;
  }
}

interface CachedSnapshot {
  connectionId: number;
  checkedAt: number;
  snapshot: StoredSnapshot;
}

/**
 * Stored snapshots by id, least recently used dropped first. An entry is used only if the row's
 * connection and check time still match (a database restored or emptied under a running server
 * may hand out an id again). The capacity follows the largest read, so a read of every connection
 * never evicts its own entries.
 */
class SnapshotCache {
  private readonly entries = new Map<number, CachedSnapshot>();
  private capacity = MIN_CACHED_SNAPSHOTS;

  /** The entries as they are now: a read that skipped their payloads finds them even if evicted meanwhile. */
  pin(): Map<number, CachedSnapshot> {
    return new Map(this.entries);
  }

  get(id: number, connectionId: number, checkedAt: number, pinned: Map<number, CachedSnapshot>): StoredSnapshot | undefined {
    const e = pinned.get(id);
    if (e === undefined || e.connectionId !== connectionId || e.checkedAt !== checkedAt) return undefined;
    this.entries.delete(id);
    this.entries.set(id, e);
    return e.snapshot;
  }

  set(id: number, connectionId: number, checkedAt: number, snapshot: StoredSnapshot): void {
    this.entries.delete(id);
    this.entries.set(id, { connectionId, checkedAt, snapshot });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  /** Room for at least `n` entries (twice what one read of every connection needs). */
  fit(n: number): void {
    this.capacity = Math.max(this.capacity, 2 * n);
  }
}

/** A read skipped the payload of a snapshot it then could not take from the cache. */
class SkippedUncached extends Error {}

interface LeaseRequest {
  connectionId: number;
  owner: string;
  now: Date;
  until: Date;
}

/** Items handled in one statement or transaction at most. */
const MAX_BATCH = 200;
/** Rows per multi-row INSERT: within SQLite's and PostgreSQL's bind-parameter limits for these tables. */
const ROWS_PER_INSERT = 200;
/** Stored snapshots kept for GET /usage at least (see SnapshotCache). */
const MIN_CACHED_SNAPSHOTS = 4096;

const SNAPSHOT_COLUMNS = ['id', 'connection_id', 'provider', 'status', 'summary', 'metrics', 'raw', 'error_code', 'error_message', 'checked_at', 'duration_ms'] as const;

/** The row keys of a snapshot's columns under a prefix, built once per prefix (not per row). */
const keysByPrefix = new Map<string, Record<(typeof SNAPSHOT_COLUMNS)[number], string>>();
function snapshotKeys(prefix: string): Record<(typeof SNAPSHOT_COLUMNS)[number], string> {
  let keys = keysByPrefix.get(prefix);
  if (!keys) {
    keys = Object.fromEntries(SNAPSHOT_COLUMNS.map((c) => [c, `${prefix}${c}`])) as Record<(typeof SNAPSHOT_COLUMNS)[number], string>;
    keysByPrefix.set(prefix, keys);
  }
  return keys;
}

/**
 * Group commit: items added while a batch is being written wait and go together in the next batch;
 * an item added to an idle group is written after one turn of the event loop, with whatever else
 * arrived in that turn. A batch holds one item per key and one group value (items that do not fit
 * wait for a later batch). When a batch fails, its items are retried one by one, so one bad item
 * fails only itself.
 */
class Grouped<T, R> {
  private readonly queue: Array<{ item: T; resolve: (r: R) => void; reject: (err: unknown) => void }> = [];
  private running = false;

  constructor(
    private readonly key: (item: T) => number,
    private readonly group: (item: T) => string,
    private readonly write: (batch: T[]) => Promise<R[]>,
  ) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        // Let requests and other I/O in first (with SQLite every statement completes synchronously,
        // so a busy poll would otherwise hold the event loop); the batch grows meanwhile.
        await new Promise((r) => setImmediate(r));
        const batch: typeof this.queue = [];
        const rest: typeof this.queue = [];
        const keys = new Set<number>();
        const group = this.group(this.queue[0]!.item);
        for (const entry of this.queue) {
          const key = this.key(entry.item);
          if (batch.length < MAX_BATCH && !keys.has(key) && this.group(entry.item) === group) {
            keys.add(key);
            batch.push(entry);
          } else rest.push(entry);
        }
        this.queue.splice(0, this.queue.length, ...rest);
        try {
          const results = await this.write(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i]!));
        } catch (err) {
          if (batch.length === 1) batch[0]!.reject(err);
          else {
            for (const b of batch) {
              await this.write([b.item]).then(([r]) => b.resolve(r!), b.reject);
            }
          }
        }
      }
    } finally {
      // In the same step as the last look at the queue: an item added after it starts a new drain.
      this.running = false;
    }
  }
}

/** The queries of the polling tables. Statement counts never grow with the number of connections. */
export class PollingStore {
  readonly sql: Sql;

  constructor(db: Database) {
    this.sql = new Sql(db);
  }

  private get knex(): Knex {
    return this.sql.knex;
  }

  toSnapshot(row: Record<string, unknown>, prefix = ''): UsageSnapshot | null {
    const k = snapshotKeys(prefix);
    const { sql } = this;
    if (row[k.id] === null || row[k.id] === undefined) return null;
    return {
      id: sql.num(row[k.id])!,
      provider_config_id: sql.num(row[k.connection_id])!,
      provider: String(row[k.provider]),
      status: row[k.status] as UsageSnapshot['status'],
      summary: String(row[k.summary] ?? ''),
      metrics: sql.parseJson<Metric[]>(row[k.metrics]) ?? [],
      raw: sql.parseJson(row[k.raw]) ?? {},
      error: (row[k.error_message] as string | null) ?? null,
      error_code: (row[k.error_code] as ErrorCode | null) ?? null,
      checked_at: sql.iso(row[k.checked_at])!,
      duration_ms: sql.num(row[k.duration_ms]),
    };
  }

  private readonly snapshots = new SnapshotCache();

  /**
   * A snapshot of a GET /usage row: from the cache when that id was read before (the query then
   * skipped its metrics and raw payload), else built from the row (raw left as text).
   */
  private storedSnapshot(row: Record<string, unknown>, prefix: string, pinned: Map<number, CachedSnapshot>): StoredSnapshot | null {
    const k = snapshotKeys(prefix);
    const { sql } = this;
    if (row[k.id] === null || row[k.id] === undefined) return null;
    const id = sql.num(row[k.id])!;
    const connectionId = sql.num(row[k.connection_id])!;
    const checked = row[k.checked_at];
    const checkedAt = typeof checked === 'number' ? checked : sql.date(checked)!.getTime();
    const cached = this.snapshots.get(id, connectionId, checkedAt, pinned);
    if (cached) return cached;
    // Both columns are NOT NULL: null means the query skipped them for a cached id that no longer matches.
    if (row[k.metrics] === null && row[k.raw] === null) throw new SkippedUncached();
    const raw = row[k.raw];
    const snapshot = new StoredSnapshot(
      {
        id,
        provider_config_id: connectionId,
        provider: String(row[k.provider]),
        status: row[k.status] as UsageSnapshot['status'],
        summary: String(row[k.summary] ?? ''),
        metrics: sql.parseJson<Metric[]>(row[k.metrics]) ?? [],
        error: (row[k.error_message] as string | null) ?? null,
        error_code: (row[k.error_code] as ErrorCode | null) ?? null,
        checked_at: new Date(checkedAt).toISOString(),
        duration_ms: sql.num(row[k.duration_ms]),
      },
      // Text as stored (SQLite; PostgreSQL is asked for raw::text); a number if SQLite's column affinity made one.
      raw === undefined || raw === 'null' ? '{}' : typeof raw === 'string' ? raw : JSON.stringify(raw),
    );
    this.snapshots.set(id, connectionId, checkedAt, snapshot);
    return snapshot;
  }

  /**
   * Stores one poll result: snapshot, observations, native upserts, state and rotated credentials,
   * in one transaction. Results that arrive while a transaction is being written are written
   * together in the next one (group commit): during a poll of many connections that takes a few
   * multi-row statements per batch instead of five statements per result. Each result stays atomic
   * (all of it is in one transaction); if a batch fails, its results are written one by one, so one
   * bad result fails only its own poll.
   */
  saveOutcome(outcome: PollOutcome): Promise<UsageSnapshot> {
    return this.outcomes.add(outcome);
  }

  private readonly outcomes = new Grouped<PollOutcome, UsageSnapshot>(
    (o) => o.snapshot.connectionId,
    (o) => o.leaseOwner ?? '',
    (batch) => this.knex.transaction((trx) => this.write(trx, batch)),
  );

  /** Writes poll results (at most one per connection, one lease owner) with a few multi-row statements. */
  private async write(trx: Knex.Transaction, outcomes: PollOutcome[]): Promise<UsageSnapshot[]> {
    const { sql } = this;
    const ids = new Map<number, number>();
    for (let i = 0; i < outcomes.length; i += ROWS_PER_INSERT) {
      const rows = outcomes.slice(i, i + ROWS_PER_INSERT).map(({ snapshot: s }) => ({
        connection_id: s.connectionId,
        provider: s.provider,
        status: s.status,
        summary: s.summary,
        metrics: sql.json(s.metrics),
        raw: sql.json(s.raw ?? {}),
        error_code: s.errorCode,
        error_message: s.errorMessage,
        checked_at: sql.ts(s.checkedAt),
        duration_ms: s.durationMs,
      }));
      // RETURNING promises no order: the connection id (unique in a batch) says which row is which.
      const inserted: Array<{ id: unknown; connection_id: unknown }> = await trx('usage_snapshot').insert(rows).returning(['id', 'connection_id']);
      for (const r of inserted) ids.set(sql.num(r.connection_id)!, sql.num(r.id)!);
    }

    const observations = outcomes.flatMap(({ snapshot: s, observations: obs }) =>
      s.status === 'error'
        ? []
        : obs.map((o) => ({
            connection_id: s.connectionId,
            provider: s.provider,
            metric: o.metric,
            value: o.value,
            unit: o.unit,
            kind: o.kind,
            source: o.source,
            observed_at: sql.ts(new Date(o.observed_at)),
            window_start: o.window_start ? sql.ts(new Date(o.window_start)) : null,
            window_end: o.window_end ? sql.ts(new Date(o.window_end)) : null,
            reset_at: o.reset_at ? sql.ts(new Date(o.reset_at)) : null,
            model: o.model,
            native_key: o.source === 'native' ? `${o.metric}|${o.window_start}|${o.window_end}|${o.model ?? ''}` : null,
          })),
    );
    const plain = observations.filter((r) => r.native_key === null);
    const native = observations.filter((r) => r.native_key !== null);
    for (let i = 0; i < plain.length; i += ROWS_PER_INSERT) await trx('usage_observation').insert(plain.slice(i, i + ROWS_PER_INSERT));
    // Provider-native buckets overlap between polls: the same window updates in place.
    for (let i = 0; i < native.length; i += ROWS_PER_INSERT) {
      await trx('usage_observation')
        .insert(native.slice(i, i + ROWS_PER_INSERT))
        .onConflict(['connection_id', 'native_key'])
        .merge(['value', 'unit', 'observed_at']);
    }

    // Releasing the lease here saves a statement per poll; a lease another process took over stays theirs.
    const owner = outcomes[0]?.leaseOwner;
    const release = owner
      ? {
          lease_owner: trx.raw('case when connection_state.lease_owner = ? then null else connection_state.lease_owner end', [owner]),
          lease_until: trx.raw('case when connection_state.lease_owner = ? then null else connection_state.lease_until end', [owner]),
        }
      : {};
    const state = (o: PollOutcome) => ({
      connection_id: o.snapshot.connectionId,
      last_attempt_at: sql.ts(o.snapshot.checkedAt),
      latest_snapshot_id: ids.get(o.snapshot.connectionId)!,
      next_poll_at: sql.ts(o.nextPollAt),
      backoff_until: sql.tsOrNull(o.backoffUntil),
    });
    const fromInsert = (cols: string[]) => Object.fromEntries(cols.map((c) => [c, trx.raw('excluded.??', [c])]));
    const succeeded = outcomes.filter((o) => o.snapshot.status !== 'error');
    const failed = outcomes.filter((o) => o.snapshot.status === 'error');
    for (let i = 0; i < succeeded.length; i += ROWS_PER_INSERT) {
      const rows = succeeded.slice(i, i + ROWS_PER_INSERT).map((o) => ({
        ...state(o),
        last_success_at: sql.ts(o.snapshot.checkedAt),
        last_good_snapshot_id: ids.get(o.snapshot.connectionId)!,
        consecutive_failures: 0,
      }));
      await trx('connection_state')
        .insert(rows)
        .onConflict('connection_id')
        .merge({ ...fromInsert(Object.keys(rows[0]!)), ...release });
    }
    for (let i = 0; i < failed.length; i += ROWS_PER_INSERT) {
      const rows = failed.slice(i, i + ROWS_PER_INSERT).map((o) => ({ ...state(o), last_failure_at: sql.ts(o.snapshot.checkedAt), consecutive_failures: 1 }));
      await trx('connection_state')
        .insert(rows)
        .onConflict('connection_id')
        .merge({
          ...fromInsert(['connection_id', 'last_attempt_at', 'latest_snapshot_id', 'next_poll_at', 'backoff_until', 'last_failure_at']),
          consecutive_failures: trx.raw('connection_state.consecutive_failures + 1'),
          ...release,
        });
    }

    for (const o of outcomes) {
      if (o.encryptedCredentials) {
        await trx('connection').where({ id: o.snapshot.connectionId }).update({ credentials: o.encryptedCredentials, updated_at: sql.ts(o.snapshot.checkedAt) });
      }
    }
    return outcomes.map(({ snapshot: s }) =>
      this.toSnapshot({
        id: ids.get(s.connectionId),
        connection_id: s.connectionId,
        provider: s.provider,
        status: s.status,
        summary: s.summary,
        metrics: s.metrics,
        raw: s.raw ?? {},
        error_code: s.errorCode,
        error_message: s.errorMessage,
        checked_at: sql.ts(s.checkedAt),
        duration_ms: s.durationMs,
      })!,
    );
  }

  /** The metrics and time of a connection's last successful snapshot (for deltas). */
  async lastGood(connectionId: number): Promise<{ checked_at: string; metrics: Metric[] } | null> {
    const row = await this.knex('connection_state as st')
      .join('usage_snapshot as s', 's.id', 'st.last_good_snapshot_id')
      .where('st.connection_id', connectionId)
      .first('s.checked_at', 's.metrics');
    if (!row) return null;
    return { checked_at: this.sql.iso(row.checked_at)!, metrics: this.sql.parseJson<Metric[]>(row.metrics) };
  }

  async state(connectionId: number): Promise<{ nextPollAt: Date | null; backoffUntil: Date | null; leaseUntil: Date | null } | null> {
    const row = await this.knex('connection_state').where({ connection_id: connectionId }).first('next_poll_at', 'backoff_until', 'lease_until');
    if (!row) return null;
    return { nextPollAt: this.sql.date(row.next_poll_at), backoffUntil: this.sql.date(row.backoff_until), leaseUntil: this.sql.date(row.lease_until) };
  }

  /**
   * Takes the poll lease of a connection, creating its state row if needed: one upsert whose update
   * happens only while the lease is free, expired or already the owner's. It is atomic on both
   * databases (a row lock on PostgreSQL, the single writer on SQLite), so two processes never hold
   * it at once. Returns null when someone else holds it, else the last-good snapshot id. Requests
   * made while one is running go together in the next statement (one row each).
   */
  acquireLease(connectionId: number, owner: string, now: Date, until: Date): Promise<{ lastGoodSnapshotId: number | null } | null> {
    return this.leases.add({ connectionId, owner, now, until });
  }

  private readonly leases = new Grouped<LeaseRequest, { lastGoodSnapshotId: number | null } | null>(
    (r) => r.connectionId,
    (r) => r.owner,
    (batch) => this.takeLeases(batch),
  );

  private async takeLeases(batch: LeaseRequest[]): Promise<Array<{ lastGoodSnapshotId: number | null } | null>> {
    const { sql } = this;
    const owner = batch[0]!.owner;
    // A lease counts as expired only if it is for the earliest caller: never sooner than one by one.
    const now = new Date(Math.min(...batch.map((r) => r.now.getTime())));
    const rows: Array<{ connection_id: unknown; last_good_snapshot_id: unknown }> = await this.knex('connection_state')
      .insert(batch.map((r) => ({ connection_id: r.connectionId, consecutive_failures: 0, lease_owner: owner, lease_until: sql.ts(r.until) })))
      .onConflict('connection_id')
      .merge(['lease_owner', 'lease_until'])
      .where((q) =>
        q.whereNull('connection_state.lease_until').orWhere('connection_state.lease_until', '<', sql.ts(now)).orWhere('connection_state.lease_owner', owner),
      )
      .returning(['connection_id', 'last_good_snapshot_id']);
    const taken = new Map(rows.map((r) => [sql.num(r.connection_id)!, sql.num(r.last_good_snapshot_id)]));
    return batch.map((r) => (taken.has(r.connectionId) ? { lastGoodSnapshotId: taken.get(r.connectionId)! } : null));
  }

  async releaseLease(connectionId: number, owner: string): Promise<void> {
    await this.knex('connection_state').where({ connection_id: connectionId, lease_owner: owner }).update({ lease_owner: null, lease_until: null });
  }

  /** Enabled connections whose next poll is due (or that were never polled), in display order. */
  async dueConnectionIds(now: Date, providers: string[]): Promise<Array<{ id: number; provider: string }>> {
    const { sql } = this;
    const rows = await this.knex('connection as c')
      .leftJoin('connection_state as st', 'st.connection_id', 'c.id')
      .where('c.is_enabled', sql.sqlite ? 1 : true)
      .whereIn('c.provider', providers)
      .andWhere((q) => q.whereNull('st.next_poll_at').orWhere('st.next_poll_at', '<=', sql.ts(now)))
      .andWhere((q) => q.whereNull('st.backoff_until').orWhere('st.backoff_until', '<=', sql.ts(now)))
      .orderBy([{ column: 'c.display_order' }, { column: 'c.id' }])
      .select('c.id', 'c.provider');
    return rows.map((r: { id: unknown; provider: string }) => ({ id: sql.num(r.id)!, provider: r.provider }));
  }

  /** The earliest scheduled poll among enabled connections (the scheduler sleeps until then). */
  async nextDueAt(providers: string[]): Promise<Date | null> {
    const { sql } = this;
    const row = await this.knex('connection as c')
      .leftJoin('connection_state as st', 'st.connection_id', 'c.id')
      .where('c.is_enabled', sql.sqlite ? 1 : true)
      .whereIn('c.provider', providers)
      .min({ next: this.knex.raw(sql.sqlite ? 'coalesce(st.next_poll_at, 0)' : "coalesce(st.next_poll_at, 'epoch'::timestamptz)") })
      .first();
    return row?.next === null || row?.next === undefined ? null : sql.date(row.next);
  }

  /**
   * Every connection with its state and both snapshots: one statement, whatever the count. The
   * last-good snapshot is joined only when it is not the latest one (usually it is): the same row
   * is not read and parsed twice. `raw` is read as JSON text and never parsed here (see
   * StoredSnapshot); snapshots read before come from a cache by id.
   */
  async usageRows(): Promise<UsageRow[]> {
    const pinned = this.snapshots.pin();
    try {
      return await this.readUsageRows(pinned);
    } catch (err) {
      if (!(err instanceof SkippedUncached)) throw err;
      // The database changed under the cache (restored, emptied): read everything once more.
      this.snapshots.clear();
      return this.readUsageRows(new Map());
    }
  }

  private async readUsageRows(pinned: Map<number, CachedSnapshot>): Promise<UsageRow[]> {
    const { sql, knex } = this;
    // Snapshots already cached: their metrics and raw payload are not read again (one list, bound as one parameter).
    const known = [...pinned.keys()];
    const isKnown = sql.sqlite ? 'in (select value from json_each(?))' : "= any(string_to_array(?, ',')::int[])";
    const knownList = sql.sqlite ? JSON.stringify(known) : known.join(',');
    const column = (alias: string, prefix: string, c: (typeof SNAPSHOT_COLUMNS)[number]) => {
      if (c !== 'raw' && c !== 'metrics') return `${alias}.${c} as ${prefix}${c}`;
      // raw as JSON text: never parsed here (PostgreSQL stores jsonb, SQLite text).
      const value = c === 'raw' && !sql.sqlite ? '??::text' : '??';
      if (known.length === 0) return knex.raw(`${value} as ??`, [`${alias}.${c}`, `${prefix}${c}`]);
      return knex.raw(`case when ?? ${isKnown} then null else ${value} end as ??`, [`${alias}.id`, knownList, `${alias}.${c}`, `${prefix}${c}`]);
    };
    const cols = (alias: string, prefix: string) => SNAPSHOT_COLUMNS.map((c) => column(alias, prefix, c));
    const rows = await knex('connection as c')
      .leftJoin('connection_state as st', 'st.connection_id', 'c.id')
      .leftJoin('usage_snapshot as l', 'l.id', 'st.latest_snapshot_id')
      .leftJoin('usage_snapshot as g', (j) =>
        j.on('g.id', '=', 'st.last_good_snapshot_id').andOn((o) => o.onNull('st.latest_snapshot_id').orOn('g.id', '<>', 'st.latest_snapshot_id')),
      )
      .orderBy([{ column: 'c.display_order' }, { column: 'c.id' }])
      .select(
        'c.id as c_id',
        'c.provider as c_provider',
        'c.label as c_label',
        'c.base_url as c_base_url',
        'c.settings as c_settings',
        'c.is_enabled as c_is_enabled',
        'c.is_visible as c_is_visible',
        'c.display_order as c_display_order',
        'c.alert_thresholds as c_alert_thresholds',
        'c.created_at as c_created_at',
        'c.updated_at as c_updated_at',
        'st.last_attempt_at',
        'st.last_success_at',
        'st.last_failure_at',
        'st.consecutive_failures',
        'st.next_poll_at',
        'st.backoff_until',
        'st.last_good_snapshot_id',
        ...cols('l', 'l_'),
        ...cols('g', 'g_'),
      );
    this.snapshots.fit(rows.length);
    return rows.map((r: Record<string, unknown>) => {
      const latest = this.storedSnapshot(r, 'l_', pinned);
      const lastGoodId = sql.num(r.last_good_snapshot_id);
      return {
        connection: {
          id: sql.num(r.c_id),
          provider: r.c_provider,
          label: r.c_label,
          base_url: r.c_base_url ?? null,
          extra: sql.parseJson(r.c_settings) ?? {},
          is_enabled: sql.bool(r.c_is_enabled),
          is_visible: sql.bool(r.c_is_visible),
          display_order: sql.num(r.c_display_order),
          alert_thresholds: sql.parseJson(r.c_alert_thresholds) ?? [],
          created_at: sql.iso(r.c_created_at),
          updated_at: sql.iso(r.c_updated_at),
        },
        state: {
          lastAttemptAt: sql.date(r.last_attempt_at),
          lastSuccessAt: sql.date(r.last_success_at),
          lastFailureAt: sql.date(r.last_failure_at),
          consecutiveFailures: sql.num(r.consecutive_failures) ?? 0,
          nextPollAt: sql.date(r.next_poll_at),
          backoffUntil: sql.date(r.backoff_until),
        },
        latest,
        lastGood: this.storedSnapshot(r, 'g_', pinned) ?? (latest !== null && latest.head.id === lastGoodId ? latest : null),
      };
    });
  }

  /** Snapshots of one connection in [from, to], the newest `limit` of them, oldest first. */
  async history(connectionId: number, from: Date, to: Date, limit: number): Promise<UsageSnapshot[]> {
    const { sql } = this;
    const rows = await this.knex('usage_snapshot')
      .where('connection_id', connectionId)
      .andWhere('checked_at', '>=', sql.ts(from))
      .andWhere('checked_at', '<=', sql.ts(to))
      .orderBy([{ column: 'checked_at', order: 'desc' }, { column: 'id', order: 'desc' }])
      .limit(limit)
      .select(SNAPSHOT_COLUMNS);
    return rows.reverse().map((r: Record<string, unknown>) => this.toSnapshot(r)!);
  }

  async startRun(trigger: string, at: Date): Promise<number> {
    const [row] = await this.knex('poll_run').insert({ trigger, started_at: this.sql.ts(at), polled: 0, succeeded: 0, failed: 0 }).returning('id');
    return this.sql.num(typeof row === 'object' ? (row as { id: unknown }).id : row)!;
  }

  async finishRun(id: number, at: Date, counts: { polled: number; succeeded: number; failed: number }): Promise<void> {
    await this.knex('poll_run').where({ id }).update({ finished_at: this.sql.ts(at), ...counts });
  }

  async lastRun(): Promise<{ trigger: string; started_at: string; finished_at: string | null; polled: number; succeeded: number; failed: number } | null> {
    const row = await this.knex('poll_run').orderBy('id', 'desc').first();
    if (!row) return null;
    return {
      trigger: row.trigger,
      started_at: this.sql.iso(row.started_at)!,
      finished_at: this.sql.iso(row.finished_at),
      polled: this.sql.num(row.polled) ?? 0,
      succeeded: this.sql.num(row.succeeded) ?? 0,
      failed: this.sql.num(row.failed) ?? 0,
    };
  }

  async lastAttemptAt(): Promise<Date | null> {
    const row = await this.knex('connection_state').max({ at: 'last_attempt_at' }).first();
    return this.sql.date(row?.at);
  }

  /** Deletes what belongs to a connection (inside the connection delete's transaction). */
  async deleteConnectionData(trx: Knex, connectionId: number): Promise<void> {
    await trx('usage_observation').where({ connection_id: connectionId }).delete();
    await trx('usage_snapshot').where({ connection_id: connectionId }).delete();
    await trx('connection_state').where({ connection_id: connectionId }).delete();
  }

  /**
   * Retention: removes up to `batch` snapshots older than `before`, never a connection's latest or
   * last-good snapshot. Returns how many went (the caller loops while it is a full batch).
   */
  async pruneSnapshots(before: Date, batch: number): Promise<number> {
    const { sql } = this;
    const keep = this.knex('connection_state').whereNotNull('latest_snapshot_id').select('latest_snapshot_id');
    const keepGood = this.knex('connection_state').whereNotNull('last_good_snapshot_id').select('last_good_snapshot_id');
    const ids = this.knex('usage_snapshot')
      .where('checked_at', '<', sql.ts(before))
      .whereNotIn('id', keep)
      .whereNotIn('id', keepGood)
      .orderBy('id')
      .limit(batch)
      .select('id');
    const n = await this.knex('usage_snapshot').whereIn('id', ids).delete();
    return Number(n);
  }

  async pruneObservations(before: Date, batch: number): Promise<number> {
    const ids = this.knex('usage_observation').where('observed_at', '<', this.sql.ts(before)).orderBy('id').limit(batch).select('id');
    return Number(await this.knex('usage_observation').whereIn('id', ids).delete());
  }
}
