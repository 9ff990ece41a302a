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
  latest: UsageSnapshot | null;
  lastGood: UsageSnapshot | null;
}

const SNAPSHOT_COLUMNS = ['id', 'connection_id', 'provider', 'status', 'summary', 'metrics', 'raw', 'error_code', 'error_message', 'checked_at', 'duration_ms'];

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
    const get = (c: string) => row[`${prefix}${c}`];
    if (get('id') === null || get('id') === undefined) return null;
    return {
      id: this.sql.num(get('id'))!,
      provider_config_id: this.sql.num(get('connection_id'))!,
      provider: String(get('provider')),
      status: get('status') as UsageSnapshot['status'],
      summary: String(get('summary') ?? ''),
      metrics: this.sql.parseJson<Metric[]>(get('metrics')) ?? [],
      raw: this.sql.parseJson(get('raw')) ?? {},
      error: (get('error_message') as string | null) ?? null,
      error_code: (get('error_code') as ErrorCode | null) ?? null,
      checked_at: this.sql.iso(get('checked_at'))!,
      duration_ms: this.sql.num(get('duration_ms')),
    };
  }

  /** Stores one poll result: snapshot, observations, native upserts, state and rotated credentials. */
  async saveOutcome(outcome: PollOutcome): Promise<UsageSnapshot> {
    const { sql } = this;
    const s = outcome.snapshot;
    const success = s.status !== 'error';
    return this.knex.transaction(async (trx) => {
      const [inserted] = await trx('usage_snapshot')
        .insert({
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
        })
        .returning('id');
      const id = sql.num(typeof inserted === 'object' ? (inserted as { id: unknown }).id : inserted)!;

      if (success && outcome.observations.length > 0) {
        const rows = outcome.observations.map((o) => ({
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
        }));
        const plain = rows.filter((r) => r.native_key === null);
        const native = rows.filter((r) => r.native_key !== null);
        for (let i = 0; i < plain.length; i += 200) await trx('usage_observation').insert(plain.slice(i, i + 200));
        // Provider-native buckets overlap between polls: the same window updates in place.
        for (let i = 0; i < native.length; i += 200) {
          await trx('usage_observation').insert(native.slice(i, i + 200)).onConflict(['connection_id', 'native_key']).merge(['value', 'unit', 'observed_at']);
        }
      }

      const now = sql.ts(s.checkedAt);
      const state: Record<string, unknown> = {
        connection_id: s.connectionId,
        last_attempt_at: now,
        latest_snapshot_id: id,
        next_poll_at: sql.ts(outcome.nextPollAt),
        backoff_until: sql.tsOrNull(outcome.backoffUntil),
      };
      if (success) {
        Object.assign(state, { last_success_at: now, last_good_snapshot_id: id, consecutive_failures: 0 });
        await trx('connection_state').insert(state).onConflict('connection_id').merge();
      } else {
        await trx('connection_state')
          .insert({ ...state, last_failure_at: now, consecutive_failures: 1 })
          .onConflict('connection_id')
          .merge({ ...state, last_failure_at: now, consecutive_failures: trx.raw('connection_state.consecutive_failures + 1') });
      }
      if (outcome.encryptedCredentials) {
        await trx('connection').where({ id: s.connectionId }).update({ credentials: outcome.encryptedCredentials, updated_at: now });
      }
      return this.toSnapshot({ ...{ id, connection_id: s.connectionId, provider: s.provider, status: s.status, summary: s.summary, metrics: s.metrics, raw: s.raw ?? {}, error_code: s.errorCode, error_message: s.errorMessage, checked_at: now, duration_ms: s.durationMs } })!;
    });
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
   * Takes the poll lease of a connection. The conditional UPDATE is atomic on both databases (a row
   * lock on PostgreSQL, the single writer on SQLite), so two processes never hold it at once.
   */
  async acquireLease(connectionId: number, owner: string, now: Date, until: Date): Promise<boolean> {
    const { sql } = this;
    await this.knex('connection_state').insert({ connection_id: connectionId, consecutive_failures: 0 }).onConflict('connection_id').ignore();
    const updated = await this.knex('connection_state')
      .where({ connection_id: connectionId })
      .andWhere((q) => q.whereNull('lease_until').orWhere('lease_until', '<', sql.ts(now)).orWhere('lease_owner', owner))
      .update({ lease_owner: owner, lease_until: sql.ts(until) });
    return Number(updated) === 1;
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

  /** Every connection with its state and both snapshots: one statement, whatever the count. */
  async usageRows(): Promise<UsageRow[]> {
    const { sql } = this;
    const cols = (alias: string, prefix: string) => SNAPSHOT_COLUMNS.map((c) => `${alias}.${c} as ${prefix}${c}`);
    const rows = await this.knex('connection as c')
      .leftJoin('connection_state as st', 'st.connection_id', 'c.id')
      .leftJoin('usage_snapshot as l', 'l.id', 'st.latest_snapshot_id')
      .leftJoin('usage_snapshot as g', 'g.id', 'st.last_good_snapshot_id')
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
        ...cols('l', 'l_'),
        ...cols('g', 'g_'),
      );
    return rows.map((r: Record<string, unknown>) => ({
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
      latest: this.toSnapshot(r, 'l_'),
      lastGood: this.toSnapshot(r, 'g_'),
    }));
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
