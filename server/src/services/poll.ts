import os from 'node:os';
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import {
  ConflictError,
  TooManyRequestsError,
  deriveObservations,
  specsFor,
  sanitizeMessage,
  type Clock,
  type Metric,
  type ProviderPlugin,
  type UsageSnapshot,
} from '@usage-monitor/core';
import type { Settings } from '../config/settings.js';
import type { PluginRegistry } from '../plugins/registry.js';
import type { PollingStore, PollOutcome } from '../persistence/polling-store.js';
import type { PollPool } from '../polling/pool.js';
import type { PollTaskResult } from '../polling/protocol.js';
import type { ConnectionService } from './connections.js';
import type { CredentialCipher } from './crypto.js';
import { checkUsage } from './provider-runner.js';
import type { Connection } from '../persistence/entities/index.js';

export type PollTrigger = 'manual' | 'schedule' | 'single';

/**
 * Runs polls: one connection on demand, all of them, or those the scheduler finds due. Two polls of
 * one connection are never in flight: in this process a second caller gets the running poll's
 * promise; across processes a database lease decides.
 */
export class PollService {
  private readonly inFlight = new Map<number, Promise<UsageSnapshot>>();
  /**
   * The last successful snapshot this process stored per connection, for deltas. Used only when the
   * lease reports the same last-good snapshot id (snapshots never change), else read from the database.
   */
  private readonly lastGoodSeen = new Map<number, { id: number; checked_at: string; metrics: Metric[] }>();
  private runs = 0;
  private readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;

  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly registry: PluginRegistry,
    private readonly store: PollingStore,
    private readonly pool: PollPool,
    private readonly connections: ConnectionService,
    private readonly cipher: CredentialCipher,
  ) {}

  get intervalMs(): number {
    return Math.round(this.settings.autoPollIntervalMinutes * 60_000);
  }

  get isPolling(): boolean {
    return this.runs > 0 || this.inFlight.size > 0;
  }

  /** On-demand poll of one connection (404 unknown, 409 disabled or plugin not loaded). */
  async pollConnection(id: number): Promise<UsageSnapshot> {
    const connection = await this.connections.get(id);
    if (!connection.isEnabled) throw new ConflictError(`Connection ${id} is disabled; enable it to poll`);
    if (!this.registry.provider(connection.provider)) {
      throw new ConflictError(`The plugin of provider "${connection.provider}" is not loaded`);
    }
    const state = await this.store.state(id);
    const now = this.clock.now();
    if (state?.backoffUntil && state.backoffUntil > now) {
      const seconds = Math.ceil((state.backoffUntil.getTime() - now.getTime()) / 1000);
      throw new TooManyRequestsError(`The provider rate-limited this connection; the next poll is allowed in ${seconds} s`, seconds);
    }
    return this.poll(connection);
  }

  /** Polls every enabled connection whose plugin is loaded; records a poll run. */
  async pollAll(trigger: PollTrigger = 'manual'): Promise<UsageSnapshot[]> {
    const all = await this.connections.listEntities();
    this.forgetDeleted(all);
    const targets = all.filter((c) => c.isEnabled && this.registry.provider(c.provider));
    return this.pollMany(targets, trigger);
  }

  /** What the scheduler calls: the connections that are due now. */
  async pollDue(): Promise<number> {
    const due = await this.store.dueConnectionIds(this.clock.now(), this.loadedProviders());
    if (due.length === 0) return 0;
    const all = await this.connections.listEntities();
    this.forgetDeleted(all);
    const byId = new Map(all.map((c) => [c.id, c]));
    const targets = due.map((d) => byId.get(d.id)).filter((c): c is Connection => c !== undefined);
    await this.pollMany(targets, 'schedule');
    return targets.length;
  }

  /** Drops the cached last-good metrics of connections that no longer exist. */
  private forgetDeleted(all: Connection[]): void {
    const ids = new Set(all.map((c) => c.id));
    for (const id of this.lastGoodSeen.keys()) if (!ids.has(id)) this.lastGoodSeen.delete(id);
  }

  loadedProviders(): string[] {
    return this.registry.listProviders().map((p) => p.plugin.id);
  }

  private async pollMany(targets: Connection[], trigger: PollTrigger): Promise<UsageSnapshot[]> {
    this.runs++;
    const runId = await this.store.startRun(trigger, this.clock.now());
    const results: UsageSnapshot[] = new Array(targets.length);
    let next = 0;
    // The pool bounds real concurrency; this bounds how many polls wait on it at once.
    const lanes = Math.min(targets.length, this.settings.pollConcurrency);
    try {
      await Promise.all(
        Array.from({ length: lanes }, async () => {
          while (next < targets.length) {
            const i = next++;
            results[i] = await this.poll(targets[i]!).catch((err: unknown) => this.failedToStart(targets[i]!, err));
          }
        }),
      );
    } finally {
      this.runs--;
      const succeeded = results.filter((s) => s && s.status !== 'error').length;
      await this.store.finishRun(runId, this.clock.now(), { polled: targets.length, succeeded, failed: targets.length - succeeded });
    }
    return results;
  }

  /** A poll that could not even start (decryption, lease) is reported as an error snapshot-like row. */
  private failedToStart(c: Connection, err: unknown): UsageSnapshot {
    this.logger.error({ err, connectionId: c.id }, 'poll could not start');
    return {
      id: 0,
      provider_config_id: c.id,
      provider: c.provider,
      status: 'error',
      summary: 'The poll could not start',
      metrics: [],
      raw: {},
      error: sanitizeMessage((err as Error)?.message ?? 'unknown error'),
      error_code: 'internal_error',
      checked_at: this.clock.now().toISOString(),
      duration_ms: null,
    };
  }

  private poll(connection: Connection): Promise<UsageSnapshot> {
    const running = this.inFlight.get(connection.id);
    if (running) return running;
    const p = this.leasedPoll(connection).finally(() => this.inFlight.delete(connection.id));
    this.inFlight.set(connection.id, p);
    return p;
  }

  private async leasedPoll(connection: Connection): Promise<UsageSnapshot> {
    const timeoutMs = this.settings.requestTimeoutSeconds * 1000;
    const leaseMs = timeoutMs + 30_000;
    let lease: { lastGoodSnapshotId: number | null } | null;
    for (const deadline = Date.now() + leaseMs; ; ) {
      const now = this.clock.now();
      lease = await this.store.acquireLease(connection.id, this.owner, now, new Date(now.getTime() + leaseMs));
      if (lease) break;
      // Another process is polling this connection: wait for it and return what it stored.
      if (Date.now() > deadline) throw new ConflictError(`Connection ${connection.id} is being polled by another process`);
      await new Promise((r) => setTimeout(r, 250));
      const stillLeased = await this.store.state(connection.id);
      if (!stillLeased?.leaseUntil || stillLeased.leaseUntil < this.clock.now()) {
        const rows = await this.store.history(connection.id, new Date(0), new Date(8.64e15), 1);
        if (rows[0]) return rows[0];
      }
    }
    let saved = false;
    try {
      return await this.execute(connection, timeoutMs, lease.lastGoodSnapshotId, () => (saved = true));
    } finally {
      // A stored outcome released the lease in its own transaction.
      if (!saved) await this.store.releaseLease(connection.id, this.owner);
    }
  }

  private async execute(connection: Connection, timeoutMs: number, lastGoodId: number | null, onSaved: () => void): Promise<UsageSnapshot> {
    const loaded = this.registry.provider(connection.provider)!;
    const credentials = this.connections.credentialsOf(connection);
    const result = await this.pool.run({
      packageName: loaded.packageName,
      providerId: connection.provider,
      connection: { credentials, settings: connection.settings, baseUrl: connection.baseUrl },
      timeoutMs,
      allowedHosts: this.settings.customHttpAllowedHosts,
      nowOffsetMs: this.clock.now().getTime() - Date.now(),
    });
    this.forwardLogs(connection, result);
    const outcome = await this.outcome(connection, loaded.plugin, credentials, result, lastGoodId);
    const snapshot = await this.store.saveOutcome({ ...outcome, leaseOwner: this.owner });
    onSaved();
    if (snapshot.status !== 'error') {
      // As the database would return it: a JSON copy.
      this.lastGoodSeen.set(connection.id, { id: snapshot.id, checked_at: snapshot.checked_at, metrics: JSON.parse(JSON.stringify(snapshot.metrics)) as Metric[] });
    }
    if (outcome.encryptedCredentials) this.connections.invalidate();
    if (snapshot.status === 'error') {
      this.logger.warn({ connectionId: connection.id, provider: connection.provider, code: snapshot.error_code, error: snapshot.error }, 'poll failed');
    }
    return snapshot;
  }

  private async outcome(
    connection: Connection,
    plugin: ProviderPlugin,
    credentials: Record<string, unknown>,
    result: PollTaskResult,
    lastGoodId: number | null,
  ): Promise<PollOutcome> {
    const checkedAt = this.clock.now();
    const base = { connectionId: connection.id, provider: connection.provider, checkedAt, durationMs: result.durationMs };
    const nextPollAt = new Date(checkedAt.getTime() + this.intervalMs);
    if (result.ok) {
      try {
        const usage = checkUsage(result.usage);
        const seen = this.lastGoodSeen.get(connection.id);
        const previous =
          lastGoodId === null ? null : seen?.id === lastGoodId ? { checked_at: seen.checked_at, metrics: seen.metrics } : await this.store.lastGood(connection.id);
        const observations = deriveObservations({
          specs: specsFor(plugin, connection.settings),
          current: { checked_at: checkedAt.toISOString(), metrics: usage.metrics },
          previous,
          native: usage.native,
        });
        return {
          snapshot: { ...base, status: usage.status, summary: usage.summary, metrics: usage.metrics, raw: usage.raw ?? {}, errorCode: null, errorMessage: null },
          observations,
          // Rotated tokens (OAuth refresh) are stored in the same transaction as the snapshot.
          ...(usage.credentials ? { encryptedCredentials: this.cipher.encryptJson({ ...credentials, ...usage.credentials }) } : {}),
          nextPollAt,
          backoffUntil: null,
        };
      } catch (err) {
        result = { ok: false, error: { code: 'upstream_error', message: (err as Error).message }, durationMs: result.durationMs, logs: [] };
      }
    }
    const error = result.error;
    const retryAfterMs = error.code === 'rate_limited' ? (error.retryAfterMs ?? this.intervalMs) : null;
    const backoffUntil = retryAfterMs !== null ? new Date(checkedAt.getTime() + retryAfterMs) : null;
    const message = sanitizeMessage(error.message, Object.values(credentials).filter((v): v is string => typeof v === 'string'));
    return {
      snapshot: { ...base, status: 'error', summary: message, metrics: [], raw: {}, errorCode: error.code, errorMessage: message },
      observations: [],
      nextPollAt: backoffUntil && backoffUntil > nextPollAt ? backoffUntil : nextPollAt,
      backoffUntil,
    };
  }

  private forwardLogs(connection: Connection, result: PollTaskResult): void {
    for (const entry of result.logs) {
      this.logger[entry.level]({ ...entry.fields, connectionId: connection.id, provider: connection.provider }, entry.msg);
    }
  }

  /** Waits for polls in flight (used at shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
