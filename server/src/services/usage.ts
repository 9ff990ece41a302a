import {
  computeHealth,
  evaluateThreshold,
  mostSevere,
  specsFor,
  type AlertState,
  type Clock,
  type Health,
  type Metric,
  type MetricSpec,
  type ProviderPlugin,
  type ThresholdRule,
  type UsageSnapshot,
} from '@usage-monitor/core';
import type { PluginRegistry } from '../plugins/registry.js';
import type { PollingStore, SnapshotHead, StoredSnapshot, UsageRow } from '../persistence/polling-store.js';
import type { PollService } from './poll.js';

export interface Alert {
  metric: string;
  metric_type: MetricSpec['type'] | null;
  value: number | null;
  unit: string | null;
  direction: ThresholdRule['direction'];
  alert_state: AlertState;
  thresholds: { warning: number | null; critical: number | null; exhausted: number | null };
}

/** GET /usage row (API.md, compat). */
export interface UsageEntry {
  config: Record<string, unknown>;
  latest: UsageSnapshot | null;
  last_good: UsageSnapshot | null;
  health: Health;
  alerts: Alert[];
  alert_state: AlertState;
}

/** A GET /usage row before serialization: snapshots as stored, `lastGood` already null unless stale. */
interface CurrentEntry {
  config: Record<string, unknown>;
  latest: StoredSnapshot | null;
  lastGood: StoredSnapshot | null;
  health: Health;
  alerts: Alert[];
  alert_state: AlertState;
}

const MASK = '••••••••';

/** Current state: health, last-known-good and alerts for every connection, from one query. */
export class UsageService {
  constructor(
    private readonly clock: Clock,
    private readonly registry: PluginRegistry,
    private readonly store: PollingStore,
    private readonly poll: PollService,
  ) {}

  async usage(): Promise<UsageEntry[]> {
    return (await this.current()).map((e) => ({
      config: e.config,
      latest: e.latest?.toSnapshot() ?? null,
      last_good: e.lastGood?.toSnapshot() ?? null,
      health: e.health,
      alerts: e.alerts,
      alert_state: e.alert_state,
    }));
  }

  /**
   * GET /usage as JSON bytes: the same JSON value, key order included, as `JSON.stringify(await
   * usage())`. Each snapshot's JSON is built once per snapshot and copied in as bytes (its raw
   * payload is never parsed); the rest is serialized per request (health depends on the time).
   */
  async usageJson(): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let text = '[';
    const snapshot = (s: StoredSnapshot | null) => {
      if (s === null) {
        text += 'null';
        return;
      }
      chunks.push(Buffer.from(text), s.json());
      text = '';
    };
    for (const e of await this.current()) {
      text += `${text === '[' ? '' : ','}{"config":${JSON.stringify(e.config)},"latest":`;
      snapshot(e.latest);
      text += ',"last_good":';
      snapshot(e.lastGood);
      text += `,"health":${JSON.stringify(e.health)},"alerts":${JSON.stringify(e.alerts)},"alert_state":${JSON.stringify(e.alert_state)}}`;
    }
    chunks.push(Buffer.from(`${text}]`));
    return Buffer.concat(chunks);
  }

  /** Every connection's state: the parts of a GET /usage row, snapshots as stored (raw unparsed). */
  private async current(): Promise<CurrentEntry[]> {
    const rows = await this.store.usageRows();
    const now = this.clock.now();
    return rows.map((row) => this.entry(row, now));
  }

  private entry(row: UsageRow, now: Date): CurrentEntry {
    const c = row.connection;
    const provider = String(c.provider);
    const latest = row.latest?.head ?? null;
    const health = computeHealth({
      ...row.state,
      latestFailed: latest?.status === 'error',
      latestError: latest?.status === 'error' ? latest.error : null,
      intervalMs: this.poll.intervalMs,
      now,
    });
    const stale = health.status === 'stale';
    const basis = stale ? row.lastGood?.head : latest?.status === 'error' ? null : latest;
    const plugin = this.registry.provider(provider)?.plugin;
    const specs = plugin ? safeSpecs(plugin, c.extra as Record<string, unknown>) : {};
    const alerts = ((c.alert_thresholds as ThresholdRule[]) ?? []).map((rule) => alertFor(rule, basis?.metrics ?? [], specs[rule.metric]));
    return {
      config: { ...c, api_key_masked: MASK, available: plugin !== undefined },
      latest: row.latest,
      lastGood: stale ? row.lastGood : null,
      health,
      alerts,
      alert_state: mostSevere(alerts.map((a) => a.alert_state)),
    };
  }

  /** The flat payload of the gethomepage.dev customapi widget (API.md, compat). */
  async homepage(): Promise<Record<string, unknown>> {
    const entries = (await this.current()).filter((e) => e.config.is_enabled);
    const metrics: Record<string, number | string | null> = {};
    const list = entries.map((e) => {
      const provider = String(e.config.provider);
      const plugin = this.registry.provider(provider)?.plugin;
      const latest = e.latest?.head ?? null;
      const shown = e.health.status === 'stale' ? (e.lastGood?.head ?? null) : latest?.status === 'error' ? null : latest;
      for (const m of shown?.metrics ?? []) {
        metrics[`${slug(provider)}_${slug(String(e.config.label))}_${slug(m.label)}`] = m.value;
      }
      const specs = plugin ? safeSpecs(plugin, e.config.extra as Record<string, unknown>) : {};
      const status = e.health.status === 'healthy' ? (latest?.status ?? 'healthy') : e.health.status;
      return {
        provider,
        config_id: e.config.id,
        label: `${plugin?.name ?? provider} (${e.config.label})`,
        value: shown ? shortValue(shown, specs) : (e.health.latest_error ?? 'no data yet'),
        status,
      };
    });
    const healthy = list.filter((l) => l.status === 'healthy').length;
    const checks = entries.map((e) => e.health.last_attempt_at).filter((t): t is string => t !== null).sort();
    return {
      configured_providers: entries.length,
      healthy_providers: healthy,
      degraded_providers: entries.length - healthy,
      latest_check: checks.at(-1) ?? null,
      summary: entries.length === 0 ? 'No providers configured' : `${healthy} of ${entries.length} healthy`,
      metrics,
      list,
    };
  }
}

/** Specs for display: settings that no longer yield specs show no alerts rather than failing the page. */
function safeSpecs(plugin: ProviderPlugin, settings: Record<string, unknown>): Record<string, MetricSpec> {
  try {
    return specsFor(plugin, settings);
  } catch {
    return {};
  }
}

function alertFor(rule: ThresholdRule, metrics: Metric[], spec: MetricSpec | undefined): Alert {
  const m = metrics.find((x) => x.label === rule.metric);
  const value = typeof m?.value === 'number' ? m.value : null;
  return {
    metric: rule.metric,
    metric_type: spec?.type ?? null,
    value,
    unit: m?.unit ?? spec?.unit ?? null,
    direction: rule.direction,
    alert_state: evaluateThreshold(rule, value),
    thresholds: { warning: rule.warning ?? null, critical: rule.critical ?? null, exhausted: rule.exhausted ?? null },
  };
}

/** Flat widget keys: lower-case words joined by `_`; `%` is spelled `pct` so "Used %" and "Used" stay apart. */
function slug(s: string): string {
  return s.toLowerCase().replace(/%/g, ' pct ').replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
}

export function formatValue(value: number, unit: string): string {
  const rounded = Math.abs(value) >= 100 ? Math.round(value) : Math.round(value * 100) / 100;
  if (unit === 'USD') return `$${rounded.toFixed(Math.abs(value) >= 100 ? 0 : 2)}`;
  if (unit === 'percent') return `${rounded}%`;
  return `${rounded.toLocaleString('en-US')} ${unit}`;
}

/** A short human text for the widget: what is left (remaining, balance, percent left), else the headline, else the summary. */
function shortValue(s: SnapshotHead, specs: Record<string, MetricSpec>): string {
  const numeric = s.metrics.filter((m): m is Metric & { value: number } => typeof m.value === 'number');
  const of = (label: string) => numeric.find((m) => m.label === label);
  const byType = (type: MetricSpec['type']) => numeric.find((m) => specs[m.label]?.type === type);
  const headline = Object.keys(specs).find((l) => specs[l]!.headline);
  const left = byType('remaining') ?? byType('balance');
  if (left) return `${formatValue(left.value, left.unit)} left`;
  const used = numeric.find((m) => specs[m.label]?.type === 'percent_used' && specs[m.label]?.utilization);
  if (used) return `${formatValue(Math.max(0, 100 - used.value), 'percent')} left`;
  const h = headline ? of(headline) : undefined;
  if (h) return formatValue(h.value, h.unit);
  return s.summary;
}
