import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import {
  NotFoundError,
  UpstreamError,
  ValidationError,
  deserializeError,
  sanitizeMessage,
  secretValues,
  serializeError,
  type Clock,
  type OAuthBrowserFlow,
  type OAuthContext,
  type OAuthDeviceFlow,
  type OAuthFlowStatus,
  type OAuthStepResult,
  type ProviderPlugin,
} from '@usage-monitor/core';
import type { Settings } from '../config/settings.js';
import type { PluginRegistry } from '../plugins/registry.js';
import { bodyAjv, fieldErrors, validateWith } from '../http/validation.js';
import { connectionSpecs, type ConnectionRecord, type ConnectionService } from './connections.js';
import { buildPluginContext } from './plugin-runtime.js';

/**
 * OAuth device and browser flows for providers whose plugin declares them (API.md, "Providers and
 * connections").
 *
 * Flow state lives only in this process's memory, keyed by a random 256-bit `flow_id`. It holds the
 * plugin's opaque state (device codes, PKCE verifiers) and, once the provider issued them, the
 * credentials until they are saved: secrets that are never returned, logged or persisted. A flow is
 * deleted when it completes (the connection is saved) or is denied, and when it expires its state is
 * dropped; a small tombstone without secrets remains for an hour so the client's next poll reads
 * `status: expired` (200) instead of a bare 404. An unknown, finished or forgotten flow_id is a 404.
 * A flow started on another provider or of the other kind is unknown too. A restart forgets every
 * flow (the user starts again).
 *
 * `error` is not terminal: the flow stays until it expires, so a browser flow can take a corrected
 * callback and a device flow can be polled again. Plugin exceptions (network, timeouts, 5xx) are
 * classified as in credential tests (502/504 problem, ConfigError 400) and keep the flow too.
 *
 * The provider is asked at most once per interval about a device flow (the start counts): a poll
 * that comes sooner is answered `slow_down` without asking it. Concurrent calls on one flow share
 * one provider call. Flows last at most an hour whatever the plugin says, and at most 100 are kept
 * (starting more evicts the oldest).
 *
 * A completed flow creates a connection with the start's settings and base URL, or with
 * `config_id` gives that connection (same provider) the new credentials, and the label if one is
 * given; its settings and base URL stay as they are.
 * When the provider completed but saving fails (duplicate label 409, bad label 400, the connection
 * to re-authorize was deleted 404), the credentials stay with the flow and the next call with
 * corrected input saves them without asking the provider again.
 */

export type FlowKind = 'device' | 'browser';
interface FlowsByKind {
  device: OAuthDeviceFlow;
  browser: OAuthBrowserFlow;
}

export interface FlowStartInput {
  /** The connection's plugin settings (validated against the plugin's settings schema, with defaults). */
  extra?: Record<string, unknown>;
  base_url?: string | null;
}

export interface FlowStepInput {
  label?: string | null;
  /** Re-authorize this existing connection (same provider) instead of creating one. */
  config_id?: number;
}

export interface DeviceStartResponse {
  flow_id: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string | null;
  expires_at: string;
  interval_seconds: number;
}

export interface BrowserStartResponse {
  flow_id: string;
  authorization_url: string;
  redirect_uri: string;
  expires_at: string;
}

export interface StepResponse {
  status: OAuthFlowStatus;
  interval_seconds?: number;
  error?: string;
  config?: ConnectionRecord;
}

interface LiveFlow {
  provider: string;
  kind: FlowKind;
  /** The plugin's opaque state (secret). */
  state: Record<string, unknown>;
  settings: Record<string, unknown>;
  baseUrl: string | null;
  expiresAt: number;
  intervalSeconds: number;
  /** When the provider was last asked (device polls), for the interval guard. */
  lastPollAt: number | null;
  /** Issued by the provider but not saved yet (secret). */
  credentials?: Record<string, unknown>;
  inflight?: Promise<StepResponse>;
  timer?: NodeJS.Timeout;
}

interface Tombstone {
  provider: string;
  kind: FlowKind;
  forgetAt: number;
}

/** Flows older than this are cut to it, whatever the plugin says. */
const MAX_FLOW_SECONDS = 60 * 60;
/** How long an expired flow answers `expired` before its id is forgotten. */
const TOMBSTONE_MS = 60 * 60 * 1000;
/** Admin-only, but bounded anyway: starting more evicts the oldest. */
const MAX_LIVE_FLOWS = 100;
const MAX_TOMBSTONES = 1000;
/** Polls may come this much earlier than the interval (timer jitter) without being slowed down. */
const POLL_SLACK_MS = 1000;

const deviceStartSchema = {
  type: 'object',
  required: ['state', 'user_code', 'verification_uri', 'expires_in_seconds', 'interval_seconds'],
  properties: {
    state: { type: 'object' },
    user_code: { type: 'string', minLength: 1, maxLength: 200 },
    verification_uri: { type: 'string', pattern: '^https?://', maxLength: 4000 },
    verification_uri_complete: { type: ['string', 'null'], pattern: '^https?://', maxLength: 4000 },
    expires_in_seconds: { type: 'number', exclusiveMinimum: 0 },
    interval_seconds: { type: 'number', minimum: 0 },
  },
};
const browserStartSchema = {
  type: 'object',
  required: ['state', 'authorization_url', 'redirect_uri', 'expires_in_seconds'],
  properties: {
    state: { type: 'object' },
    authorization_url: { type: 'string', pattern: '^https?://', maxLength: 8000 },
    redirect_uri: { type: 'string', minLength: 1, maxLength: 4000 },
    expires_in_seconds: { type: 'number', exclusiveMinimum: 0 },
  },
};
const stepResultSchema = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { enum: ['pending', 'slow_down', 'complete', 'expired', 'denied', 'error'] },
    credentials: { type: 'object' },
    state: { type: 'object' },
    interval_seconds: { type: 'number', minimum: 0 },
    error: { type: 'string' },
  },
};
const checkDeviceStart = bodyAjv.compile(deviceStartSchema);
const checkBrowserStart = bodyAjv.compile(browserStartSchema);
const checkStepResult = bodyAjv.compile(stepResultSchema);

function checkPluginOutput<T>(validate: typeof checkStepResult, value: unknown, what: string): T {
  if (!validate(value)) {
    const e = fieldErrors(validate.errors, 'result')[0];
    throw new UpstreamError(`The plugin returned an invalid ${what}: ${e?.path ?? ''} ${e?.message ?? ''}`.trim());
  }
  return value as T;
}

const clampInterval = (s: number) => Math.min(60, Math.max(1, Math.round(s)));

export class OAuthFlowService {
  private readonly flows = new Map<string, LiveFlow>();
  private readonly tombstones = new Map<string, Tombstone>();

  constructor(
    readonly settings: Settings,
    readonly logger: Logger,
    readonly clock: Clock,
    readonly registry: PluginRegistry,
    readonly connections: ConnectionService,
  ) {}

  async startDevice(providerId: string, input: FlowStartInput): Promise<DeviceStartResponse> {
    const { plugin, flow } = this.flowOf(providerId, 'device');
    const prepared = this.prepare(plugin, input);
    const start = checkPluginOutput<Awaited<ReturnType<typeof flow.start>>>(
      checkDeviceStart,
      await this.call(plugin, prepared, {}, (ctx) => flow.start(ctx)),
      'device flow start',
    );
    const interval = clampInterval(start.interval_seconds);
    const { id, expiresAt } = this.register(providerId, 'device', prepared, start.state, start.expires_in_seconds, interval);
    return {
      flow_id: id,
      user_code: start.user_code,
      verification_uri: start.verification_uri,
      verification_uri_complete: start.verification_uri_complete ?? null,
      expires_at: expiresAt.toISOString(),
      interval_seconds: interval,
    };
  }

  async startBrowser(providerId: string, input: FlowStartInput): Promise<BrowserStartResponse> {
    const { plugin, flow } = this.flowOf(providerId, 'browser');
    const prepared = this.prepare(plugin, input);
    const start = checkPluginOutput<Awaited<ReturnType<typeof flow.start>>>(
      checkBrowserStart,
      await this.call(plugin, prepared, {}, (ctx) => flow.start(ctx)),
      'browser flow start',
    );
    const { id, expiresAt } = this.register(providerId, 'browser', prepared, start.state, start.expires_in_seconds, 0);
    return { flow_id: id, authorization_url: start.authorization_url, redirect_uri: start.redirect_uri, expires_at: expiresAt.toISOString() };
  }

  async pollDevice(providerId: string, flowId: string, input: FlowStepInput): Promise<StepResponse> {
    const { flow } = this.flowOf(providerId, 'device');
    return this.step(providerId, 'device', flowId, input, (ctx, state) => flow.poll(ctx, state));
  }

  async completeBrowser(providerId: string, flowId: string, input: FlowStepInput & { callback: string }): Promise<StepResponse> {
    const { flow } = this.flowOf(providerId, 'browser');
    return this.step(providerId, 'browser', flowId, input, (ctx, state) => flow.complete(ctx, state, input.callback));
  }

  /** The number of flows in progress (for tests and diagnostics; no ids, no state). */
  get liveFlows(): number {
    return this.flows.size;
  }

  // ------------------------------------------------------------------ internals

  private flowOf<K extends FlowKind>(providerId: string, kind: K) {
    const loaded = this.registry.provider(providerId);
    if (!loaded) throw new NotFoundError(`Provider "${providerId}" is not loaded`);
    const auth = loaded.plugin.auth;
    const flow = auth?.kind === 'oauth' ? (auth[kind] as FlowsByKind[K] | undefined) : undefined;
    if (!flow) throw new NotFoundError(`Provider "${providerId}" has no OAuth ${kind} flow`);
    return { plugin: loaded.plugin, flow };
  }

  /** Validates the start body the way a connection's settings are validated, defaults included. */
  private prepare(plugin: ProviderPlugin, input: FlowStartInput): { settings: Record<string, unknown>; baseUrl: string | null } {
    const settings = structuredClone(input.extra ?? {});
    if (plugin.settings) validateWith(plugin.settings, settings, 'body/extra');
    connectionSpecs(plugin, settings);
    const url = input.base_url?.trim();
    return { settings, baseUrl: url ? url.replace(/\/+$/, '') : null };
  }

  /** Runs one plugin step with an OAuthContext; whatever it throws is classified like a credential test. */
  private async call<T>(
    plugin: ProviderPlugin,
    target: { settings: Record<string, unknown>; baseUrl: string | null },
    state: Record<string, unknown>,
    fn: (ctx: OAuthContext) => Promise<T>,
  ): Promise<T> {
    // The flow state goes in as "credentials" only so that its values are scrubbed from the
    // plugin's log lines and error messages; the OAuthContext itself carries no credentials.
    const { ctx, secrets } = buildPluginContext(plugin, { credentials: state, settings: target.settings, baseUrl: target.baseUrl }, {
      timeoutMs: this.settings.requestTimeoutSeconds * 1000,
      allowedHosts: this.settings.customHttpAllowedHosts,
      clock: this.clock,
      logger: this.logger.child({ provider: plugin.id, oauth: true }),
    });
    const oauthCtx: OAuthContext = { settings: ctx.settings, baseUrl: ctx.baseUrl, http: ctx.http, clock: ctx.clock, signal: ctx.signal, logger: ctx.logger };
    try {
      return await fn(oauthCtx);
    } catch (err) {
      throw deserializeError(serializeError(err, secrets));
    }
  }

  private register(
    provider: string,
    kind: FlowKind,
    prepared: { settings: Record<string, unknown>; baseUrl: string | null },
    state: Record<string, unknown>,
    expiresInSeconds: number,
    intervalSeconds: number,
  ): { id: string; expiresAt: Date } {
    this.sweep();
    while (this.flows.size >= MAX_LIVE_FLOWS) this.drop(this.flows.keys().next().value as string);
    const id = randomBytes(32).toString('base64url');
    const now = this.clock.now().getTime();
    const ttlMs = Math.min(expiresInSeconds, MAX_FLOW_SECONDS) * 1000;
    // The start asked the provider already: a device flow's first poll is due one interval later.
    const flow: LiveFlow = { provider, kind, state, ...prepared, expiresAt: now + ttlMs, intervalSeconds, lastPollAt: kind === 'device' ? now : null };
    // Drops the secrets at expiry even if nobody asks again (the clock check below decides).
    flow.timer = setTimeout(() => this.sweep(), ttlMs + 1000);
    flow.timer.unref();
    this.flows.set(id, flow);
    this.logger.info({ provider, kind }, 'OAuth flow started');
    return { id, expiresAt: new Date(now + ttlMs) };
  }

  /** Expires live flows past their time (state dropped, tombstone kept) and forgets old tombstones. */
  private sweep(): void {
    const now = this.clock.now().getTime();
    for (const [id, flow] of this.flows) if (now >= flow.expiresAt && !flow.inflight) this.expire(id, flow);
    for (const [id, t] of this.tombstones) if (now >= t.forgetAt) this.tombstones.delete(id);
  }

  private expire(id: string, flow: LiveFlow): void {
    this.drop(id);
    while (this.tombstones.size >= MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value as string);
    this.tombstones.set(id, { provider: flow.provider, kind: flow.kind, forgetAt: flow.expiresAt + TOMBSTONE_MS });
  }

  private drop(id: string): void {
    const flow = this.flows.get(id);
    if (!flow) return;
    clearTimeout(flow.timer);
    flow.state = {};
    delete flow.credentials;
    this.flows.delete(id);
  }

  private expiredResponse(): StepResponse {
    return { status: 'expired', error: 'The sign-in expired; start again' };
  }

  private step(
    provider: string,
    kind: FlowKind,
    flowId: string,
    input: FlowStepInput,
    run: (ctx: OAuthContext, state: Record<string, unknown>) => Promise<OAuthStepResult>,
  ): Promise<StepResponse> {
    this.sweep();
    const flow = this.flows.get(flowId);
    if (!flow || flow.provider !== provider || flow.kind !== kind) {
      const t = this.tombstones.get(flowId);
      if (t && t.provider === provider && t.kind === kind) return Promise.resolve(this.expiredResponse());
      throw new NotFoundError('No such sign-in in progress (it finished, or the server restarted); start again');
    }
    flow.inflight ??= this.runStep(flowId, flow, input, run).finally(() => {
      flow.inflight = undefined;
    });
    return flow.inflight;
  }

  private async runStep(
    flowId: string,
    flow: LiveFlow,
    input: FlowStepInput,
    run: (ctx: OAuthContext, state: Record<string, unknown>) => Promise<OAuthStepResult>,
  ): Promise<StepResponse> {
    // The connection to re-authorize must exist before the provider is asked (a code is single-use).
    if (input.config_id !== undefined) await this.reauthTarget(flow.provider, input.config_id);
    if (!flow.credentials) {
      const plugin = this.registry.provider(flow.provider)!.plugin;
      const now = this.clock.now().getTime();
      if (flow.kind === 'device' && flow.lastPollAt !== null && now - flow.lastPollAt < flow.intervalSeconds * 1000 - POLL_SLACK_MS) {
        return { status: 'slow_down', interval_seconds: flow.intervalSeconds };
      }
      flow.lastPollAt = now;
      const result = checkPluginOutput<OAuthStepResult>(checkStepResult, await this.call(plugin, flow, flow.state, (ctx) => run(ctx, flow.state)), 'flow step result');
      const scrub = (m: string | undefined, fallback: string) => sanitizeMessage(m ?? fallback, [...secretValues(flow.state), ...secretValues(result.credentials ?? {})]);
      if (result.state) flow.state = result.state;
      if (result.interval_seconds !== undefined) flow.intervalSeconds = clampInterval(result.interval_seconds);
      switch (result.status) {
        case 'pending':
        case 'slow_down':
          return { status: result.status, interval_seconds: flow.intervalSeconds };
        case 'error':
          return { status: 'error', error: scrub(result.error, 'The sign-in failed') };
        case 'expired':
          this.expire(flowId, flow);
          return { status: 'expired', error: scrub(result.error, 'The sign-in expired; start again') };
        case 'denied':
          this.drop(flowId);
          this.logger.info({ provider: flow.provider, kind: flow.kind }, 'OAuth flow denied');
          return { status: 'denied', error: scrub(result.error, 'The sign-in was denied') };
        case 'complete':
          if (!result.credentials) throw new UpstreamError('The plugin completed the sign-in without credentials');
          flow.credentials = result.credentials;
          break;
      }
    }
    const config = await this.save(flow, flow.credentials!, input);
    this.drop(flowId);
    this.logger.info({ provider: flow.provider, kind: flow.kind, config_id: config.id, reauthorized: input.config_id !== undefined }, 'OAuth flow completed');
    return { status: 'complete', config };
  }

  private async reauthTarget(provider: string, configId: number): Promise<void> {
    const c = await this.connections.get(configId);
    if (c.provider !== provider) {
      throw new ValidationError(`/body/config_id ${configId} is a ${c.provider} connection, not ${provider}`, [
        { path: '/body/config_id', message: `must be a ${provider} connection` },
      ]);
    }
  }

  /** Creates the connection, or gives the one named by config_id its new credentials. */
  private async save(flow: LiveFlow, credentials: Record<string, unknown>, input: FlowStepInput): Promise<ConnectionRecord> {
    const label = typeof input.label === 'string' && input.label.trim() !== '' ? input.label : undefined;
    if (input.config_id !== undefined) {
      await this.reauthTarget(flow.provider, input.config_id);
      // Only the credentials (and a given label) change: the connection keeps its settings and base URL.
      return this.connections.update(input.config_id, { credentials, ...(label !== undefined ? { label } : {}) });
    }
    return this.connections.create({ provider: flow.provider, label: label ?? null, credentials, extra: flow.settings, base_url: flow.baseUrl });
  }
}
