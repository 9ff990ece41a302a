import type { PluginContext, PluginLogger } from '../contracts/context.js';
import { checkProviderSemantics, providerDescriptorSchema } from '../contracts/manifest.js';
import { isNumericSpec, type MetricSpec } from '../contracts/metric-spec.js';
import type { ProviderPlugin, ProviderUsage } from '../contracts/provider.js';
import { providerUsageSchema } from '../domain/metrics.js';
import { RateLimitedError, TimeoutError, UsageMonitorError } from '../errors.js';
import { createHttpClient } from '../http/client.js';
import { isSecretKey } from '../redact.js';
import { diffMetrics, diffNative, sameJson, show } from './compare.js';
import {
  startFixtureServer,
  substituteBaseUrl,
  type FixtureEntry,
  type FixtureResponseSpec,
  type RecordedRequest,
} from './fixture-server.js';
import { applyDefaults, formatProblems, isIsoDateTime, validateSchema, type Schema } from './schema.js';
import { loadTestCases, UPSTREAM_ERROR_CODES, type TestCase, type UpstreamErrorCode } from './testcases.js';

// ------------------------------------------------------------------------------------ public types

/**
 * The checks the kit runs besides the testcases themselves. Each can be skipped with a reason
 * (`skip: { missing_fields: 'the API has no required fields' }`); the reason is shown in reports.
 */
export const GENERIC_CHECKS = [
  /** The first upstream request answered 401 must throw AuthError. */
  'auth_401',
  /** ... 403 must throw AuthError. */
  'auth_403',
  /** ... 429 with `Retry-After: 7` must throw RateLimitedError with retryAfterMs 7000. */
  'rate_limited',
  /** ... 500 must throw UpstreamError. */
  'server_error',
  /** ... no answer at all must throw TimeoutError (the request timeout is short). */
  'timeout',
  /** ... `{not json` with status 200 must throw UpstreamError or SchemaDriftError. */
  'malformed_json',
  /** ... `{}` with status 200 must throw SchemaDriftError. */
  'missing_fields',
  /**
   * Returned metrics are declared (by `metricsFor(settings)` for plugins with dynamic metrics), with
   * the declared unit and a value of the unit's type.
   */
  'metric_specs',
  /** At least one testcase returns a null metric value (missing data stays null, never 0). */
  'null_preservation',
  /** No credential value appears in results, error messages or log lines. */
  'secret_leak',
  /** Everything a plugin throws is one of core's upstream error classes. */
  'classified_errors',
] as const;

export type GenericCheckName = (typeof GENERIC_CHECKS)[number];

/** `descriptor`: the plugin object; `testcases`: the folder and its files; `case`: one case's outcome. */
export type CheckName = 'descriptor' | 'testcases' | 'case' | GenericCheckName;

export interface ConformanceOptions {
  /** The testcases folder: a path, or `new URL('../testcases/', import.meta.url)`. */
  dir: string | URL;
  /** Generic checks to skip, each with the reason. */
  skip?: Partial<Record<GenericCheckName, string>>;
  /** How long one fetchUsage run may take (also the per-request timeout). Default 10 000 ms. */
  timeoutMs?: number;
  /** The per-request timeout of the `timeout` check, whose upstream never answers. Default 300 ms. */
  hangTimeoutMs?: number;
}

export interface ConformanceFailure {
  /** The case folder name, `name [check]` for a generic run derived from it, or `(plugin)`/`(testcases)`. */
  case: string;
  check: CheckName;
  message: string;
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields?: Record<string, unknown>;
}

export interface ErrorSummary {
  /** The core error code, or null when the plugin threw something unclassified. */
  code: string | null;
  name: string;
  message: string;
  retryAfterMs?: number | null;
}

export interface CaseReport {
  name: string;
  description: string | null;
  /** What expected.json / expected-error.json asked for. */
  expects: 'result' | 'error';
  ok: boolean;
  durationMs: number;
  requests: RecordedRequest[];
  result: ProviderUsage | null;
  error: ErrorSummary | null;
  logs: LogLine[];
}

export interface CheckStatus {
  name: CheckName;
  status: 'passed' | 'failed' | 'skipped';
  /** Why it was skipped. */
  reason?: string;
}

export interface ConformanceReport {
  plugin: string;
  ok: boolean;
  failures: ConformanceFailure[];
  cases: CaseReport[];
  /** The status of `descriptor`, `testcases` and every generic check. */
  checks: CheckStatus[];
  durationMs: number;
}

// ------------------------------------------------------------------------------------ constants

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_HANG_TIMEOUT_MS = 300;
/** How long after ctx.signal is aborted a plugin may take to give up. */
const SETTLE_GRACE_MS = 1_000;
const PLUGIN = '(plugin)';
const TESTCASES = '(testcases)';
/** Credential strings shorter than this are not searched for (ids, regions, flags). */
const MIN_SECRET_LENGTH = 8;

type GenericRunName = Extract<GenericCheckName, 'auth_401' | 'auth_403' | 'rate_limited' | 'server_error' | 'timeout' | 'malformed_json' | 'missing_fields'>;

interface GenericRun {
  check: GenericRunName;
  what: string;
  response: FixtureResponseSpec;
  expect: UpstreamErrorCode[];
  retryAfterMs?: number;
}

const errorBody = (status: number, message: string) => ({ error: { code: status, message } });

const GENERIC_RUNS: GenericRun[] = [
  { check: 'auth_401', what: 'HTTP 401', response: { status: 401, body: errorBody(401, 'Unauthorized') }, expect: ['auth_error'] },
  { check: 'auth_403', what: 'HTTP 403', response: { status: 403, body: errorBody(403, 'Forbidden') }, expect: ['auth_error'] },
  {
    check: 'rate_limited',
    what: 'HTTP 429 with Retry-After: 7',
    response: { status: 429, headers: { 'retry-after': '7' }, body: errorBody(429, 'Rate limit exceeded') },
    expect: ['rate_limited'],
    retryAfterMs: 7000,
  },
  { check: 'server_error', what: 'HTTP 500', response: { status: 500, body: errorBody(500, 'Internal server error') }, expect: ['upstream_error'] },
  { check: 'timeout', what: 'no answer at all', response: { hang: true }, expect: ['timeout'] },
  {
    check: 'malformed_json',
    what: 'HTTP 200 with the body "{not json"',
    response: { status: 200, headers: { 'content-type': 'application/json' }, body_text: '{not json' },
    expect: ['upstream_error', 'schema_drift'],
  },
  { check: 'missing_fields', what: 'HTTP 200 with the body {}', response: { status: 200, body: {} }, expect: ['schema_drift'] },
];

const CORE_ERROR_NAMES = new Set(['AuthError', 'RateLimitedError', 'UpstreamError', 'TimeoutError', 'SchemaDriftError', 'ConfigError']);

// ------------------------------------------------------------------------------------ helpers

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A secret shown in a message: enough to recognise it, not the value. */
const mask = (s: string) => `${s.slice(0, 4)}…(${s.length} chars)`;

function summarizeError(err: unknown): ErrorSummary {
  const e = err as { name?: unknown; message?: unknown; code?: unknown; retryAfterMs?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : typeof err;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const code = typeof e?.code === 'string' ? e.code : null;
  // instanceof is the rule; the name check accepts a second copy of core (a plugin built against another install).
  const classified =
    code !== null &&
    (UPSTREAM_ERROR_CODES as readonly string[]).includes(code) &&
    (err instanceof UsageMonitorError || (err instanceof Error && CORE_ERROR_NAMES.has(name)));
  const out: ErrorSummary = { code: classified ? code : null, name, message };
  if (err instanceof RateLimitedError || (classified && code === 'rate_limited')) {
    out.retryAfterMs = typeof e?.retryAfterMs === 'number' ? e.retryAfterMs : null;
  }
  return out;
}

function describeError(e: ErrorSummary): string {
  return e.code ? `${e.code} (${e.name}: ${e.message})` : `an unclassified ${e.name}: ${e.message}`;
}

/**
 * The credential values a plugin must never expose: every string leaf (at least 8 characters) of
 * the credentials, except under properties the schema declares as non-secret (neither
 * `writeOnly` nor a secret-looking name such as `account_id`), and except the fixture URL.
 */
export function credentialSecrets(plugin: Pick<ProviderPlugin, 'credentials'>, credentials: Record<string, unknown>, baseUrl?: string): string[] {
  const schema: unknown = plugin.credentials;
  const props = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  const out = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      if (v.length >= MIN_SECRET_LENGTH && !(baseUrl && v.includes(baseUrl))) out.add(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (isObject(v)) Object.values(v).forEach(walk);
  };
  for (const [key, value] of Object.entries(credentials)) {
    const spec = props[key];
    const declaredPublic = isObject(spec) && spec.writeOnly !== true && !isSecretKey(key);
    if (!declaredPublic) walk(value);
  }
  return [...out];
}

/** The kit's own messages quote results and errors; they show secrets masked, too. */
function maskSecrets(message: string, secrets: readonly string[]): string {
  return secrets.reduce((m, s) => m.split(s).join(mask(s)), message);
}

function findLeaks(secrets: readonly string[], where: string, text: string): string[] {
  return secrets.filter((s) => text.includes(s)).map((s) => `${where} contains the credential value ${mask(s)}`);
}

function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return String(v);
  }
}

/** Leak messages for a run: the result (except its rotated `credentials`), the error, the logs. */
function leaksOf(secrets: readonly string[], result: ProviderUsage | null, error: unknown, logs: readonly LogLine[]): string[] {
  const out: string[] = [];
  if (result) {
    out.push(...findLeaks(secrets, 'result.summary', String(result.summary)));
    out.push(...findLeaks(secrets, 'result.metrics', jsonText(result.metrics)));
    if (result.native !== undefined) out.push(...findLeaks(secrets, 'result.native', jsonText(result.native)));
    if (result.raw !== undefined) out.push(...findLeaks(secrets, 'result.raw', jsonText(result.raw)));
  }
  if (error !== undefined && error !== null) {
    const e = error as { message?: unknown };
    out.push(...findLeaks(secrets, 'the error message', String(e.message ?? error)));
    if (typeof error === 'object') {
      const own = Object.fromEntries(Object.entries(error).filter(([k]) => k !== 'message' && k !== 'stack'));
      out.push(...findLeaks(secrets, 'a property of the thrown error', jsonText(own)));
    }
  }
  for (const line of logs) {
    out.push(...findLeaks(secrets, `the ${line.level} log line "${line.msg.slice(0, 60)}"`, line.msg + jsonText(line.fields ?? {})));
  }
  return [...new Set(out)];
}

/** Problems of returned metrics and native buckets against the declared MetricSpecs. */
export function checkMetricSpecs(metrics: Record<string, MetricSpec>, usage: ProviderUsage): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const m of Array.isArray(usage.metrics) ? usage.metrics : []) {
    if (!isObject(m)) continue;
    const spec = metrics[m.label];
    if (seen.has(m.label)) out.push(`"${m.label}" is returned more than once`);
    seen.add(m.label);
    if (!spec) {
      out.push(`"${m.label}" is not declared in the plugin's metrics`);
      continue;
    }
    if (m.unit !== spec.unit) out.push(`"${m.label}": unit "${m.unit}" differs from the declared unit "${spec.unit}"`);
    const v = m.value;
    if (spec.unit === 'datetime') {
      if (v !== null && !(typeof v === 'string' && isIsoDateTime(v))) out.push(`"${m.label}": a datetime metric must be an ISO 8601 string or null (got ${show(v)})`);
    } else if (spec.unit === 'text') {
      if (v !== null && typeof v !== 'string') out.push(`"${m.label}": a text metric must be a string or null (got ${show(v)})`);
    } else if (isNumericSpec(spec)) {
      if (v !== null && !(typeof v === 'number' && Number.isFinite(v))) {
        out.push(`"${m.label}": a ${spec.unit} metric must be a finite number or null (got ${show(v)})`);
      }
    }
    if (spec.type === 'percent_used' && typeof v === 'number' && (v < 0 || v > 100)) {
      out.push(`"${m.label}": a percent_used value must be within 0..100 (got ${v})`);
    }
    if (m.maximum !== null && !(typeof m.maximum === 'number' && Number.isFinite(m.maximum))) {
      out.push(`"${m.label}": maximum must be a finite number or null (got ${show(m.maximum)})`);
    }
  }
  for (const b of Array.isArray(usage.native) ? usage.native : []) {
    if (!isObject(b)) continue;
    const spec = metrics[b.metric];
    if (spec && b.unit !== spec.unit) out.push(`native bucket of "${b.metric}": unit "${b.unit}" differs from the declared unit "${spec.unit}"`);
    if (typeof b.window_start === 'string' && typeof b.window_end === 'string' && Date.parse(b.window_start) >= Date.parse(b.window_end)) {
      out.push(`native bucket of "${b.metric}": window_start ${b.window_start} is not before window_end ${b.window_end}`);
    }
  }
  return out;
}

/** Problems of the plugin object itself: descriptor schema, semantics, secret credential fields. */
export function checkDescriptor(plugin: unknown): string[] {
  if (!isObject(plugin)) return ['the default export must be the object returned by defineProvider()'];
  const out = formatProblems(validateSchema(providerDescriptorSchema as unknown as Schema, plugin), 'descriptor');
  out.push(...checkProviderSemantics(plugin as Parameters<typeof checkProviderSemantics>[0]));
  if (plugin.kind !== undefined && plugin.kind !== 'provider') out.push(`kind: must be "provider" (got ${show(plugin.kind)})`);

  const credentials = plugin.credentials;
  if (isObject(credentials) && isObject(credentials.properties)) {
    const props = Object.entries(credentials.properties);
    for (const [key, spec] of props) {
      if (!isObject(spec)) continue;
      const types = Array.isArray(spec.type) ? spec.type : [spec.type];
      if (types.includes('string') && isSecretKey(key) && spec.writeOnly !== true) {
        out.push(`credentials.properties.${key}: a secret string property must be marked writeOnly: true`);
      }
    }
    if (props.length > 0 && !props.some(([, spec]) => isObject(spec) && spec.writeOnly === true)) {
      out.push('credentials: no property is marked writeOnly: true (credentials hold secrets; non-secret options belong in settings)');
    }
  }
  for (const field of ['credentials', 'settings'] as const) {
    const schema = plugin[field];
    if (!isObject(schema) || !isObject(schema.properties)) continue;
    for (const [key, spec] of Object.entries(schema.properties)) {
      if (isObject(spec) && 'default' in spec) {
        out.push(...formatProblems(validateSchema(spec, spec.default), `${field}.properties.${key}.default`));
      }
    }
  }
  if (isObject(plugin.metrics)) {
    for (const [label, spec] of Object.entries(plugin.metrics)) {
      if (label.length === 0 || label.length > 120) out.push(`metrics: the label "${label.slice(0, 40)}" must have 1 to 120 characters`);
      if (isObject(spec) && spec.type === 'percent_used' && spec.unit !== 'percent') {
        out.push(`metrics.${label}: a percent_used metric must have unit "percent" (got ${show(spec.unit)})`);
      }
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------ running one case

interface RunOutcome {
  settled: boolean;
  result: ProviderUsage | null;
  /** What was thrown; undefined when nothing was. */
  error: unknown;
  threw: boolean;
  logs: LogLine[];
  requests: RecordedRequest[];
  unmatchedReasons: string[];
  unused: FixtureEntry[];
  secrets: string[];
  /** The metric specs of this run's settings (see `specsOf`); null when they cannot be computed. */
  specs: Record<string, MetricSpec> | null;
  durationMs: number;
}

/**
 * The metric specs a result is checked against: `metricsFor(settings)` for plugins whose metrics
 * depend on the connection's settings (`capabilities.dynamic_metrics`), else the declared metrics.
 * Null when `metricsFor` throws (the settings define no valid metric list).
 */
function specsOf(plugin: unknown, settings: Record<string, unknown>): Record<string, MetricSpec> | null {
  if (!isObject(plugin)) return null;
  if (typeof plugin.metricsFor === 'function') {
    try {
      const specs: unknown = (plugin.metricsFor as (s: unknown) => unknown).call(plugin, settings);
      return isObject(specs) ? (specs as Record<string, MetricSpec>) : null;
    } catch {
      return null;
    }
  }
  return isObject(plugin.metrics) ? (plugin.metrics as Record<string, MetricSpec>) : null;
}

function capturingLogger(lines: LogLine[]): PluginLogger {
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push(fields === undefined ? { level, msg: String(msg) } : { level, msg: String(msg), fields });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

async function runOnce<C, S>(
  plugin: ProviderPlugin<C, S>,
  tc: TestCase,
  responses: readonly FixtureEntry[],
  limits: { requestTimeoutMs: number; deadlineMs: number },
): Promise<RunOutcome> {
  const started = Date.now();
  const server = await startFixtureServer(responses, { basePath: tc.basePath });
  const logs: LogLine[] = [];
  const controller = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  try {
    const baseUrl = `${server.url}${tc.basePath}`;
    const credentials = applyDefaults(plugin.credentials, substituteBaseUrl(tc.credentials, baseUrl)) as Record<string, unknown>;
    const settings = applyDefaults(plugin.settings ?? {}, substituteBaseUrl(tc.settings, baseUrl)) as Record<string, unknown>;
    const secrets = credentialSecrets(plugin as Pick<ProviderPlugin, 'credentials'>, credentials, server.url);
    const now = new Date(tc.now);
    const clock = { now: () => new Date(now) };
    const clientOptions = {
      timeoutMs: limits.requestTimeoutMs,
      signal: controller.signal,
      secrets,
      userAgent: 'usage-monitor-conformance',
      // HTTP-date Retry-After values are measured against the case's clock, as against ctx.clock in production.
      clock,
      ...(plugin.capabilities?.user_supplied_urls === true ? { hostPolicy: { allowedHosts: ['127.0.0.1', 'localhost'] } } : {}),
    };
    const http = createHttpClient(clientOptions);
    const ctx: PluginContext<C, S> = {
      credentials: credentials as C,
      settings: settings as S,
      baseUrl,
      http,
      clock,
      signal: controller.signal,
      logger: capturingLogger(logs),
    };
    timers.push(setTimeout(() => controller.abort(new TimeoutError('The conformance run exceeded its time limit')), limits.deadlineMs));
    const unsettled = new Promise<{ kind: 'unsettled' }>((resolve) => {
      timers.push(setTimeout(() => resolve({ kind: 'unsettled' }), limits.deadlineMs + SETTLE_GRACE_MS));
    });
    const call = (async () => plugin.fetchUsage(ctx))().then(
      (result) => ({ kind: 'result' as const, result }),
      (error: unknown) => ({ kind: 'error' as const, error }),
    );
    const outcome = await Promise.race([call, unsettled]);
    return {
      settled: outcome.kind !== 'unsettled',
      result: outcome.kind === 'result' ? outcome.result : null,
      error: outcome.kind === 'error' ? outcome.error : undefined,
      threw: outcome.kind === 'error',
      logs,
      requests: server.requests,
      unmatchedReasons: server.unmatched.map((u) => `${u.method} ${u.path}${queryText(u.query)}:\n    ${u.reason.split('\n').join('\n    ')}`),
      unused: server.unused(),
      secrets,
      specs: specsOf(plugin, settings),
      durationMs: Date.now() - started,
    };
  } finally {
    for (const t of timers) clearTimeout(t);
    controller.abort();
    await server.close();
  }
}

function queryText(q: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) for (const x of Array.isArray(v) ? v : [v]) params.append(k, x);
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** The parts of a result that must be JSON (the server stores and validates them). */
function resultProblems(result: unknown): string[] {
  if (!isObject(result)) return [`fetchUsage must resolve to a ProviderUsage object (got ${show(result)})`];
  const out = formatProblems(validateSchema(providerUsageSchema as unknown as Schema, result), 'result');
  try {
    JSON.stringify(result);
  } catch (err) {
    out.push(`result: must be JSON-serializable (${(err as Error).message})`);
  }
  return out;
}

// ------------------------------------------------------------------------------------ checkPlugin

/**
 * Runs the whole conformance suite against a provider plugin and returns a report; it never throws
 * for a broken plugin. Use `describeConformance` to get node:test tests instead.
 */
export async function checkPlugin<C, S>(plugin: ProviderPlugin<C, S>, options: ConformanceOptions): Promise<ConformanceReport> {
  const started = Date.now();
  const skip = options.skip ?? {};
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const hangTimeoutMs = options.hangTimeoutMs ?? DEFAULT_HANG_TIMEOUT_MS;
  const failures: ConformanceFailure[] = [];
  const cases: CaseReport[] = [];
  const fail = (caseName: string, check: CheckName, message: string) => {
    if (check in skip) return;
    failures.push({ case: caseName, check, message });
  };
  const pluginId = isObject(plugin) && typeof plugin.id === 'string' ? plugin.id : '(unknown)';

  // 1. The descriptor.
  const descriptorProblems = checkDescriptor(plugin);
  for (const p of descriptorProblems) fail(PLUGIN, 'descriptor', p);

  // 2. The testcases folder.
  const loaded = loadTestCases(options.dir);
  for (const [name, problem] of loaded.problems) fail(name, 'testcases', problem);
  const runnable = isObject(plugin) && typeof plugin.fetchUsage === 'function';

  // 3. Every case.
  const results: ProviderUsage[] = [];
  const firstRuns = new Map<string, RunOutcome>();
  for (const tc of runnable ? loaded.cases : []) {
    const before = failures.length;
    // Validated as the server would see them: with {{base_url}} replaced (by a stand-in URL here).
    const standIn = `http://127.0.0.1:9${tc.basePath}`;
    const validate = (schema: Schema, value: Record<string, unknown>, file: string) =>
      formatProblems(validateSchema(schema, applyDefaults(schema, substituteBaseUrl(value, standIn))), file);
    const credentialProblems = isObject(plugin.credentials) ? validate(plugin.credentials, tc.credentials, 'credentials.json') : [];
    const settingsProblems = isObject(plugin.settings) ? validate(plugin.settings, tc.settings, 'settings.json') : [];
    for (const p of [...credentialProblems, ...settingsProblems]) fail(tc.name, 'testcases', `${p} (the server would refuse this connection)`);

    const run = await runOnce(plugin, tc, tc.responses, { requestTimeoutMs: timeoutMs, deadlineMs: timeoutMs });
    firstRuns.set(tc.name, run);
    evaluateCase(tc, run, (check, message) => fail(tc.name, check, maskSecrets(message, run.secrets)));
    if (run.result && !run.threw) results.push(run.result);
    const summary = run.threw ? summarizeError(run.error) : null;
    cases.push({
      name: tc.name,
      description: tc.description,
      expects: tc.expected ? 'result' : 'error',
      ok: failures.slice(before).length === 0 && !loaded.problems.some(([n]) => n === tc.name),
      durationMs: run.durationMs,
      requests: run.requests,
      result: run.result,
      error: summary,
      logs: run.logs,
    });
  }

  // 4. Null preservation, over every case's result.
  if (runnable && loaded.cases.length > 0 && !results.some((r) => Array.isArray(r.metrics) && r.metrics.some((m) => isObject(m) && m.value === null))) {
    fail(
      TESTCASES,
      'null_preservation',
      'no testcase returns a metric with value null: add a case where the upstream omits or nulls a value (e.g. an unlimited key) and check the plugin reports null, never 0',
    );
  }

  // 5. Generic error-classification runs, derived from the first healthy case.
  const base =
    loaded.cases.find((c) => c.expected?.status === 'healthy' && !c.skipGeneric) ?? loaded.cases.find((c) => c.expected && !c.skipGeneric);
  const wanted = GENERIC_RUNS.filter((g) => !(g.check in skip));
  if (runnable && wanted.length > 0) {
    const baseRun = base ? firstRuns.get(base.name) : undefined;
    const first = baseRun?.requests[0];
    const entry = first?.matched ? base?.responses.find((r) => r.name === first.matched) : undefined;
    if (!base || !baseRun) {
      for (const g of wanted) fail(TESTCASES, g.check, 'no case with expected.json (and without skip_generic) to derive the generic checks from');
    } else if (!first || !entry) {
      const why = first ? `its first request (${first.method} ${first.path}) matched no recorded response` : 'the plugin made no upstream request';
      for (const g of wanted) fail(base.name, g.check, `cannot derive the generic checks from case "${base.name}": ${why}`);
    } else {
      for (const g of wanted) {
        const responses = base.responses.map((r) =>
          r === entry ? { ...r, name: `${r.name} (${g.what})`, response: g.response, repeat: true } : { ...r, optional: true },
        );
        const limits =
          g.check === 'timeout'
            ? { requestTimeoutMs: hangTimeoutMs, deadlineMs: Math.max(hangTimeoutMs * 10, 1000) }
            : { requestTimeoutMs: timeoutMs, deadlineMs: timeoutMs };
        const run = await runOnce(plugin, base, responses, limits);
        evaluateGeneric(g, `${entry.name}: ${first.method} ${first.path}`, run, (check, message) =>
          fail(`${base.name} [${g.check}]`, check, maskSecrets(message, run.secrets)),
        );
      }
    }
  }

  const checks: CheckStatus[] = (['descriptor', 'testcases', ...GENERIC_CHECKS] as CheckName[]).map((name) => {
    const reason = (skip as Partial<Record<CheckName, string>>)[name];
    if (reason !== undefined) return { name, status: 'skipped', reason };
    return { name, status: failures.some((f) => f.check === name) ? 'failed' : 'passed' };
  });
  return { plugin: pluginId, ok: failures.length === 0, failures, cases, checks, durationMs: Date.now() - started };
}

type Fail = (check: CheckName, message: string) => void;

/** Checks shared by every run: classification, leaks, result shape and metric specs. */
function commonChecks(run: RunOutcome, fail: Fail): ErrorSummary | null {
  let summary: ErrorSummary | null = null;
  if (run.threw) {
    summary = summarizeError(run.error);
    if (summary.code === null) {
      fail(
        'classified_errors',
        `fetchUsage threw ${describeError(summary)}; plugins must throw core errors (AuthError, RateLimitedError, UpstreamError, TimeoutError, SchemaDriftError, ConfigError)`,
      );
    }
  }
  if (run.result) {
    const shape = resultProblems(run.result);
    for (const p of shape) fail('case', p);
    if (shape.length === 0 && run.specs) for (const p of checkMetricSpecs(run.specs, run.result)) fail('metric_specs', p);
    if (!run.specs) fail('metric_specs', 'metricsFor(settings) threw or returned no object, but fetchUsage returned a result');
  }
  for (const leak of leaksOf(run.secrets, run.result, run.threw ? run.error : undefined, run.logs)) fail('secret_leak', leak);
  return summary;
}

function evaluateCase(tc: TestCase, run: RunOutcome, fail: Fail): void {
  if (!run.settled) {
    fail('case', `fetchUsage did not settle within ${SETTLE_GRACE_MS} ms after ctx.signal was aborted: a plugin must stop when the signal aborts`);
    return;
  }
  for (const u of run.unmatchedReasons) fail('case', `unmatched request (answered with HTTP 599) ${u}`);
  for (const e of run.unused) {
    if (!e.optional) fail('case', `${e.name} (${e.request.method ?? 'GET'} ${e.request.path}) was never requested; mark it "optional": true if that is fine`);
  }
  const err = commonChecks(run, fail);

  if (tc.expected) {
    if (err) {
      fail('case', `expected a ${tc.expected.status} result, but fetchUsage threw ${describeError(err)}`);
      return;
    }
    const r = run.result;
    if (!isObject(r)) return; // reported by resultProblems
    if (r.status !== tc.expected.status) fail('case', `status: expected "${tc.expected.status}", got ${show(r.status)} (summary: ${show(r.summary)})`);
    if (tc.expected.summary !== undefined && r.summary !== tc.expected.summary) {
      fail('case', `summary: expected ${show(tc.expected.summary, 300)}, got ${show(r.summary, 300)}`);
    }
    if (Array.isArray(r.metrics)) {
      const diff = diffMetrics(tc.expected.metrics, r.metrics);
      if (diff) fail('case', diff);
    }
    if (tc.expected.native !== undefined) {
      const diff = diffNative(tc.expected.native, Array.isArray(r.native) ? r.native : []);
      if (diff) fail('case', diff);
    }
    if (tc.expected.credentials !== undefined && !sameJson(tc.expected.credentials, r.credentials)) {
      fail('case', `credentials (rotated): expected ${show(tc.expected.credentials, 300)}, got ${show(r.credentials, 300)}`);
    }
    return;
  }

  const want = tc.expectedError!;
  if (!err) {
    const r = run.result;
    fail('case', `expected error ${want.code}, but fetchUsage returned ${isObject(r) ? `a ${String(r.status)} result (summary: ${show(r.summary)})` : show(r)}`);
    return;
  }
  if (err.code !== want.code) fail('case', `expected error ${want.code}, got ${describeError(err)}`);
  if (want.message_includes !== undefined && !err.message.includes(want.message_includes)) {
    fail('case', `the error message ${show(err.message, 300)} does not include ${show(want.message_includes)}`);
  }
  if (want.retry_after_ms !== undefined && err.retryAfterMs !== want.retry_after_ms) {
    fail('case', `retryAfterMs: expected ${show(want.retry_after_ms)}, got ${show(err.retryAfterMs)}`);
  }
}

function evaluateGeneric(g: GenericRun, replaced: string, run: RunOutcome, fail: Fail): void {
  const context = `when the first upstream request (${replaced}) gets ${g.what}`;
  const expected = g.expect.join(' or ');
  if (!run.settled) {
    fail(g.check, `${context}, fetchUsage did not settle, even ${SETTLE_GRACE_MS} ms after ctx.signal was aborted; expected ${expected}`);
    return;
  }
  const err = commonChecks(run, fail);
  if (!err) {
    const r = run.result;
    fail(g.check, `${context}, expected ${expected}, but fetchUsage returned ${isObject(r) ? `a ${String(r.status)} result (summary: ${show(r.summary)}): was the error swallowed?` : show(r)}`);
    return;
  }
  if (err.code === null || !(g.expect as string[]).includes(err.code)) {
    const hint = run.unmatchedReasons.length > 0 ? ` (the plugin also sent unmatched requests: ${run.unmatchedReasons.join('; ')})` : '';
    fail(g.check, `${context}, expected ${expected}, got ${describeError(err)}${hint}`);
    return;
  }
  if (g.retryAfterMs !== undefined && err.retryAfterMs !== g.retryAfterMs) {
    fail(g.check, `${context}, expected retryAfterMs ${g.retryAfterMs} (from Retry-After), got ${show(err.retryAfterMs)}`);
  }
}

/** A readable multi-line text of a report's failures (what describeConformance prints). */
export function formatFailures(failures: readonly ConformanceFailure[]): string {
  return failures.map((f) => `[${f.check}] ${f.case}: ${f.message}`).join('\n');
}
