import {
  ConfigError,
  ConflictError,
  NotFoundError,
  ValidationError,
  checkProviderSemantics,
  specsFor,
  type Clock,
  type MetricSpec,
  type ProviderPlugin,
  type ProviderUsage,
  type ThresholdRule,
} from '@usage-monitor/core';
import type { Database } from '../persistence/orm.js';
import { Connection } from '../persistence/entities/index.js';
import type { PluginRegistry } from '../plugins/registry.js';
import { validateWith } from '../http/validation.js';
import type { CredentialCipher } from './crypto.js';
import type { ProviderRunner } from './provider-runner.js';

/** API.md "Connection record" (compat). Credentials never appear here. */
export interface ConnectionRecord {
  id: number;
  provider: string;
  label: string;
  base_url: string | null;
  extra: Record<string, unknown>;
  is_enabled: boolean;
  is_visible: boolean;
  display_order: number;
  alert_thresholds: ThresholdRule[];
  created_at: string;
  updated_at: string;
  api_key_masked: string;
  available: boolean;
}

export interface ConnectionInput {
  provider?: string;
  label?: string | null;
  api_key?: string;
  credentials?: Record<string, unknown>;
  base_url?: string | null;
  extra?: Record<string, unknown>;
  is_enabled?: boolean;
  is_visible?: boolean;
  display_order?: number;
  alert_thresholds?: ThresholdRule[];
}

export interface TestResult {
  status: ProviderUsage['status'];
  summary: string;
  metrics: ProviderUsage['metrics'];
  raw: unknown;
}

const MASK = '••••••••';
const LIST_TTL_MS = 2_000;

export class ConnectionService {
  constructor(
    private readonly db: Database,
    private readonly registry: PluginRegistry,
    private readonly cipher: CredentialCipher,
    private readonly clock: Clock,
    private readonly runner: ProviderRunner,
  ) {}

  toRecord(c: Connection): ConnectionRecord {
    return {
      id: c.id,
      provider: c.provider,
      label: c.label,
      base_url: c.baseUrl,
      extra: c.settings,
      is_enabled: c.isEnabled,
      is_visible: c.isVisible,
      display_order: c.displayOrder,
      alert_thresholds: c.alertThresholds,
      created_at: c.createdAt.toISOString(),
      updated_at: c.updatedAt.toISOString(),
      api_key_masked: MASK,
      available: this.registry.provider(c.provider) !== undefined,
    };
  }

  /**
   * Connections in display order. The list is read on every dashboard refresh and changes only on
   * admin writes, so it is kept for LIST_TTL_MS; writes in this process drop it at once, and another
   * process sharing the database sees a change within the TTL.
   */
  async list(): Promise<ConnectionRecord[]> {
    return (await this.cachedList()).records;
  }

  /** The same list, already serialized: the hot GET /configs path sends these bytes as they are. */
  async listJson(): Promise<Buffer> {
    const cached = await this.cachedList();
    return (cached.json ??= Buffer.from(JSON.stringify(cached.records)));
  }

  private async cachedList(): Promise<{ records: ConnectionRecord[]; json?: Buffer; until: number }> {
    if (this.listCache && this.listCache.until > Date.now()) return this.listCache;
    const rows = await this.db.em().find(Connection, {}, { orderBy: { displayOrder: 'asc', id: 'asc' } });
    this.listCache = { records: rows.map((c) => this.toRecord(c)), until: Date.now() + LIST_TTL_MS };
    return this.listCache;
  }

  private listCache: { records: ConnectionRecord[]; json?: Buffer; until: number } | null = null;

  /** Every write calls this after it commits. */
  private changed(): void {
    this.listCache = null;
    for (const listener of this.changeListeners) listener();
  }

  /** Called after every committed change (the scheduler re-reads its schedule). */
  readonly changeListeners: Array<() => void> = [];

  /** For writers outside this service (rotated OAuth credentials stored with a poll). */
  invalidate(): void {
    this.changed();
  }

  /** All connection entities in display order (for polling; credentials stay encrypted). */
  async listEntities(): Promise<Connection[]> {
    return this.db.em().find(Connection, {}, { orderBy: { displayOrder: 'asc', id: 'asc' } });
  }

  async get(id: number): Promise<Connection> {
    const c = await this.db.em().findOne(Connection, { id });
    if (!c) throw new NotFoundError(`Connection ${id} not found`);
    return c;
  }

  /** The stored credentials, decrypted; only for running the plugin. */
  credentialsOf(c: Connection): Record<string, unknown> {
    return this.cipher.decryptJson(c.credentials);
  }

  async create(input: ConnectionInput): Promise<ConnectionRecord> {
    const providerId = input.provider!;
    const plugin = this.pluginOrFail(providerId);
    const credentials = this.checkCredentials(providerId, { ...(input.credentials ?? {}), ...(input.api_key !== undefined ? { api_key: input.api_key } : {}) });
    const settings = this.checkSettings(providerId, input.extra ?? {});
    const thresholds = this.checkThresholds(providerId, input.alert_thresholds ?? [], settings);
    const em = this.db.em();
    const label = await this.uniqueLabel(providerId, input.label, plugin.plugin.name);
    const now = this.clock.now();
    let order = input.display_order;
    if (order === undefined) {
      const [last] = await em.find(Connection, {}, { orderBy: { displayOrder: 'desc' }, fields: ['displayOrder'], limit: 1 });
      order = last ? last.displayOrder + 1 : 0;
    }
    const c = em.create(Connection, {
      provider: providerId,
      label,
      credentials: this.cipher.encryptJson(credentials),
      baseUrl: normalizeBaseUrl(input.base_url),
      settings,
      isEnabled: input.is_enabled ?? true,
      isVisible: input.is_visible ?? true,
      displayOrder: order,
      alertThresholds: thresholds,
      createdAt: now,
      updatedAt: now,
    });
    await this.flushUnique(em, label);
    this.changed();
    return this.toRecord(c);
  }

  async update(id: number, input: ConnectionInput): Promise<ConnectionRecord> {
    const em = this.db.em();
    const c = await em.findOne(Connection, { id });
    if (!c) throw new NotFoundError(`Connection ${id} not found`);
    if (input.credentials !== undefined || input.api_key !== undefined) {
      // A new credentials object replaces the stored one; a lone api_key replaces only that field.
      const base = input.credentials ?? this.cipher.decryptJson<Record<string, unknown>>(c.credentials);
      const next = { ...base, ...(input.api_key !== undefined ? { api_key: input.api_key } : {}) };
      c.credentials = this.cipher.encryptJson(this.checkCredentials(c.provider, next));
    }
    if (input.label !== undefined) {
      const plugin = this.registry.provider(c.provider);
      c.label = await this.uniqueLabel(c.provider, input.label, plugin?.plugin.name ?? c.provider, id);
    }
    if (input.extra !== undefined) c.settings = this.checkSettings(c.provider, input.extra);
    // New settings can change the metrics (dynamic metrics): the kept rules are checked against them too.
    if (input.alert_thresholds !== undefined || input.extra !== undefined) {
      c.alertThresholds = this.checkThresholds(c.provider, input.alert_thresholds ?? c.alertThresholds, c.settings, input.alert_thresholds === undefined);
    }
    if (input.base_url !== undefined) c.baseUrl = normalizeBaseUrl(input.base_url);
    if (input.is_enabled !== undefined) c.isEnabled = input.is_enabled;
    if (input.is_visible !== undefined) c.isVisible = input.is_visible;
    if (input.display_order !== undefined) c.displayOrder = input.display_order;
    c.updatedAt = this.clock.now();
    await this.flushUnique(em, c.label);
    this.changed();
    return this.toRecord(c);
  }

  async delete(id: number): Promise<void> {
    const em = this.db.em();
    const c = await em.findOne(Connection, { id });
    if (!c) throw new NotFoundError(`Connection ${id} not found`);
    await em.transactional(async (tx) => {
      for (const hook of this.deleteHooks) await hook(tx, id);
      await tx.nativeDelete(Connection, { id });
    });
    this.changed();
  }

  /** Later modules (snapshots, observations) register cleanup that runs in the delete's transaction. */
  readonly deleteHooks: Array<(em: ReturnType<Database['em']>, connectionId: number) => Promise<void>> = [];

  /** Puts the listed connections first, in the given order; the rest keep their relative order after them. */
  async reorder(ids: number[]): Promise<ConnectionRecord[]> {
    if (new Set(ids).size !== ids.length) {
      throw new ValidationError('/body/config_ids must not repeat an id', [{ path: '/body/config_ids', message: 'must not contain duplicates' }]);
    }
    const em = this.db.em();
    await em.transactional(async (tx) => {
      const all = await tx.find(Connection, {}, { orderBy: { displayOrder: 'asc', id: 'asc' } });
      const byId = new Map(all.map((c) => [c.id, c]));
      const unknown = ids.filter((id) => !byId.has(id));
      if (unknown.length > 0) {
        throw new ValidationError(`/body/config_ids has unknown ids: ${unknown.join(', ')}`, [
          { path: '/body/config_ids', message: `unknown ids: ${unknown.join(', ')}` },
        ]);
      }
      const listed = new Set(ids);
      const ordered = [...ids.map((id) => byId.get(id)!), ...all.filter((c) => !listed.has(c.id))];
      const now = this.clock.now();
      ordered.forEach((c, i) => {
        if (c.displayOrder !== i) {
          c.displayOrder = i;
          c.updatedAt = now;
        }
      });
    });
    this.changed();
    return this.list();
  }

  /** Runs the plugin's credential test with the given (unsaved) input. */
  async testInput(input: ConnectionInput): Promise<TestResult> {
    const providerId = input.provider!;
    const plugin = this.pluginOrFail(providerId);
    const credentials = this.checkCredentials(providerId, { ...(input.credentials ?? {}), ...(input.api_key !== undefined ? { api_key: input.api_key } : {}) });
    const settings = this.checkSettings(providerId, input.extra ?? {});
    const { rotatedCredentials: _unsaved, ...result } = await this.runner.test(plugin, { credentials, settings, baseUrl: normalizeBaseUrl(input.base_url) });
    return result;
  }

  async testStored(id: number): Promise<TestResult> {
    const c = await this.get(id);
    const plugin = this.registry.provider(c.provider);
    if (!plugin) throw new ConflictError(`The plugin of provider "${c.provider}" is not loaded`);
    const credentials = this.credentialsOf(c);
    const { rotatedCredentials, ...result } = await this.runner.test(plugin, { credentials, settings: c.settings, baseUrl: c.baseUrl });
    if (rotatedCredentials) {
      // The test saves no snapshot, but a refreshed single-use token must not be thrown away:
      // the stored one is already spent.
      const em = this.db.em();
      await em.nativeUpdate(Connection, { id }, { credentials: this.cipher.encryptJson({ ...credentials, ...rotatedCredentials }), updatedAt: this.clock.now() });
      this.changed();
    }
    return result;
  }

  private pluginOrFail(providerId: string) {
    const plugin = this.registry.provider(providerId);
    if (!plugin) {
      throw new ValidationError(`/body/provider "${providerId}" is not a loaded provider`, [
        { path: '/body/provider', message: `unknown provider "${providerId}"; GET /providers lists the loaded ones` },
      ]);
    }
    return plugin;
  }

  private checkCredentials(providerId: string, credentials: Record<string, unknown>): Record<string, unknown> {
    const plugin = this.pluginOrFail(providerId).plugin;
    const copy = structuredClone(credentials);
    validateWith(plugin.credentials, copy, 'body/credentials');
    return copy;
  }

  private checkSettings(providerId: string, settings: Record<string, unknown>): Record<string, unknown> {
    const plugin = this.registry.provider(providerId)?.plugin;
    const copy = structuredClone(settings);
    if (plugin?.settings) validateWith(plugin.settings, copy, 'body/extra');
    return copy;
  }

  /**
   * Checks threshold rules against the connection's metric specs (`specsFor`: a dynamic-metrics
   * plugin derives them from the settings, so bad metric definitions are a 400 on /body/extra).
   * `kept` says the rules are the stored ones, re-checked because the settings changed.
   */
  private checkThresholds(providerId: string, rules: ThresholdRule[], settings: Record<string, unknown>, kept = false): ThresholdRule[] {
    const plugin = this.registry.provider(providerId)?.plugin;
    if (!plugin) return rules;
    const specs = connectionSpecs(plugin, settings);
    const numeric = Object.keys(specs).filter((l) => specs[l]!.unit !== 'datetime' && specs[l]!.unit !== 'text');
    rules.forEach((rule, i) => {
      const spec = Object.hasOwn(specs, rule.metric) ? specs[rule.metric] : undefined;
      if (!spec || spec.unit === 'datetime' || spec.unit === 'text') {
        const path = kept ? '/body/extra' : `/body/alert_thresholds/${i}/metric`;
        const what = kept ? `the stored alert threshold on "${rule.metric}" refers to` : `/body/alert_thresholds/${i}/metric "${rule.metric}" is`;
        throw new ValidationError(`${what} not a numeric metric of this ${providerId} connection`, [
          { path, message: `${kept ? `alert threshold "${rule.metric}": ` : ''}must be one of: ${numeric.join(', ')}` },
        ]);
      }
    });
    return rules;
  }

  private async uniqueLabel(providerId: string, requested: string | null | undefined, base: string, selfId?: number): Promise<string> {
    const em = this.db.em();
    const trimmed = requested?.trim() ?? '';
    if (trimmed !== '') {
      const clash = await em.findOne(Connection, { provider: providerId, label: trimmed, ...(selfId ? { id: { $ne: selfId } } : {}) });
      if (clash) throw new ConflictError(`A ${providerId} connection labelled "${trimmed}" already exists`);
      return trimmed;
    }
    const taken = new Set((await em.find(Connection, { provider: providerId }, { fields: ['label'] })).map((c) => c.label));
    if (!taken.has(base)) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base} ${n}`)) return `${base} ${n}`;
  }

  /** A concurrent insert of the same label loses the race at the unique index: report it as 409. */
  private async flushUnique(em: ReturnType<Database['em']>, label: string): Promise<void> {
    try {
      await em.flush();
    } catch (err) {
      if ((err as { name?: string }).name === 'UniqueConstraintViolationException') {
        throw new ConflictError(`A connection labelled "${label}" already exists`);
      }
      throw err;
    }
  }
}

/**
 * The metric specs of a connection with these (validated) settings. A plugin with dynamic metrics
 * derives them from the settings: a ConfigError, or a list that breaks the descriptor rules, is a
 * 400 on /body/extra.
 */
export function connectionSpecs(plugin: ProviderPlugin, settings: Record<string, unknown>): Record<string, MetricSpec> {
  const invalid = (message: string, field?: string) =>
    new ValidationError(`/body/extra${field ? `/${field}` : ''}: ${message}`, [{ path: `/body/extra${field ? `/${field}` : ''}`, message }]);
  let specs: Record<string, MetricSpec>;
  try {
    specs = specsFor(plugin, settings);
  } catch (err) {
    if (err instanceof ConfigError) throw invalid(err.message, err.field);
    throw err;
  }
  if (specs === plugin.metrics) return specs;
  if (!specs || typeof specs !== 'object' || Object.keys(specs).length === 0) throw invalid('the settings define no metrics');
  const problems = checkProviderSemantics({ metrics: specs, fetchUsage: plugin.fetchUsage });
  if (problems.length > 0) throw invalid(problems.join('; '));
  return specs;
}

function normalizeBaseUrl(url: string | null | undefined): string | null {
  if (url === undefined || url === null || url.trim() === '') return null;
  return url.trim().replace(/\/+$/, '');
}
