import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { HttpClient, HttpRequestOptions, HttpResponse } from '../contracts/context.js';
import {
  AuthError,
  ConfigError,
  RateLimitedError,
  TimeoutError,
  UpstreamError,
  UsageMonitorError,
  sanitizeMessage,
} from '../errors.js';
import { isBlockedAddress, isHostAllowListed, normalizeHost, type HostPolicy } from './ssrf.js';

export interface HttpClientOptions {
  /** Default per-request timeout. */
  timeoutMs: number;
  /** Responses larger than this fail with UpstreamError instead of filling memory. */
  maxResponseBytes?: number;
  /** Aborts every request of this client (task timeout, shutdown). */
  signal?: AbortSignal;
  maxRedirects?: number;
  /** When set, every hop (including redirects) is checked against the SSRF rules. */
  hostPolicy?: HostPolicy;
  userAgent?: string;
  /**
   * Secret values: scrubbed from error messages, and on a redirect to another host every request
   * header whose value contains one of them is dropped.
   */
  secrets?: readonly string[];
  /** The time `Retry-After` HTTP dates are measured against (the plugin's `ctx.clock`); default the wall clock. */
  clock?: { now(): Date };
  /** Called once per request with the final outcome (the conformance kit records these). */
  onRequest?: (info: { method: string; url: string; status: number | null; durationMs: number }) => void;
}

const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds; null when absent or invalid. */
export function parseRetryAfter(value: string | undefined | null, now: Date = new Date()): number | null {
  if (value == null || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

function buildUrl(url: string, query: HttpRequestOptions['query']): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError('Invalid upstream URL', 'base_url');
  }
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === null || v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, String(item));
    else u.searchParams.set(k, String(v));
  }
  return u;
}

function guardedLookup(policy: HostPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const list = addresses as dns.LookupAddress[];
      const blocked = list.find((a) => isBlockedAddress(a.address));
      if (blocked && !isHostAllowListed(hostname, policy)) {
        return (callback as (e: Error) => void)(
          new ConfigError(`The host ${hostname} resolves to a blocked address (${blocked.address})`, 'base_url'),
        );
      }
      if ((options as { all?: boolean }).all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      const first = list[0]!;
      return (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
    });
  };
}

function checkUrlAllowed(u: URL, policy: HostPolicy | undefined): void {
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ConfigError(`Only http and https URLs are allowed (got ${u.protocol})`, 'base_url');
  }
  if (!policy) return;
  if (u.username || u.password) throw new ConfigError('URLs must not carry credentials', 'base_url');
  const host = normalizeHost(u.hostname);
  if (isIP(host) && isBlockedAddress(host) && !isHostAllowListed(host, policy)) {
    throw new ConfigError(`The address ${host} is not allowed`, 'base_url');
  }
}

/** An HttpClient over node:http(s) with timeouts, size cap, redirect re-checks and the SSRF guard. */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_BYTES;
  const maxRedirects = options.maxRedirects ?? 5;
  const secrets = options.secrets ?? [];
  // The same minimum length sanitizeMessage uses: shorter strings would match unrelated headers.
  const headerSecrets = secrets.filter((s) => typeof s === 'string' && s.length >= 4);
  const scrub = (m: string) => sanitizeMessage(m, secrets);

  function once(u: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number) {
    return new Promise<{ status: number; headers: Record<string, string>; text: string }>((resolve, reject) => {
      const signals = [AbortSignal.timeout(timeoutMs)];
      if (options.signal) signals.push(options.signal);
      const signal = AbortSignal.any(signals);
      if (signal.aborted) return reject(new TimeoutError());
      const lib = u.protocol === 'https:' ? https : http;
      const req = lib.request(
        u,
        {
          method,
          headers,
          signal,
          ...(options.hostPolicy ? { lookup: guardedLookup(options.hostPolicy) } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size > maxBytes) return;
            size += chunk.length;
            if (size > maxBytes) {
              // Reject first: destroying with an error after the response started would surface
              // as an uncaught 'error' event instead of rejecting this promise.
              reject(new UpstreamError(`The response exceeded ${maxBytes} bytes`, res.statusCode));
              req.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            const out: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) {
              if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
            }
            resolve({ status: res.statusCode ?? 0, headers: out, text: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err) => {
        if (err instanceof UsageMonitorError) return reject(err);
        if ((err as { name?: string }).name === 'AbortError' || signal.aborted) return reject(new TimeoutError());
        const cause = (err as { cause?: unknown }).cause;
        if (cause instanceof UsageMonitorError) return reject(cause);
        reject(new UpstreamError(scrub(`Network error: ${(err as Error).message}`)));
      });
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  async function request(url: string, opts: HttpRequestOptions = {}): Promise<HttpResponse> {
    let u = buildUrl(url, opts.query);
    let method: string = opts.method ?? 'GET';
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': options.userAgent ?? 'usage-monitor',
      ...lowerKeys(opts.headers ?? {}),
    };
    let body: string | undefined;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['content-type'] ??= 'application/json';
    } else if (opts.form !== undefined) {
      body = new URLSearchParams(opts.form).toString();
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else if (opts.body !== undefined) {
      body = opts.body;
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const timeoutMs = Math.max(1, opts.timeoutMs ?? options.timeoutMs);
    const started = Date.now();
    const originalHost = u.host;
    for (let hop = 0; ; hop++) {
      checkUrlAllowed(u, options.hostPolicy);
      let res;
      try {
        res = await once(u, method, headers, body, timeoutMs);
      } catch (err) {
        options.onRequest?.({ method, url: u.toString(), status: null, durationMs: Date.now() - started });
        throw err;
      }
      if ([301, 302, 303, 307, 308].includes(res.status) && res.headers.location) {
        if (hop >= maxRedirects) throw new UpstreamError('Too many redirects', res.status);
        const next = new URL(res.headers.location, u);
        // Never forward credentials to another host: the usual credential headers, and any header
        // (whatever its name, e.g. a custom `Api-Key`) whose value carries one of the secrets.
        if (next.host !== originalHost) {
          // 307/308 would resend the body (a token refresh, say) to the other host: refuse instead.
          if ((res.status === 307 || res.status === 308) && body !== undefined) {
            throw new UpstreamError(`Refusing to resend a request body to another host (${next.host})`, res.status);
          }
          delete headers.authorization;
          delete headers.cookie;
          for (const [k, v] of Object.entries(headers)) {
            if (/^x-.*(key|token)/.test(k) || headerSecrets.some((secret) => v.includes(secret))) delete headers[k];
          }
        }
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
          delete headers['content-type'];
          delete headers['content-length'];
        }
        u = next;
        continue;
      }
      options.onRequest?.({ method, url: u.toString(), status: res.status, durationMs: Date.now() - started });
      const finalUrl = u.toString();
      return {
        status: res.status,
        headers: res.headers,
        url: finalUrl,
        text: res.text,
        json<T>() {
          try {
            return JSON.parse(res.text) as T;
          } catch {
            throw new UpstreamError('The provider returned malformed JSON', res.status);
          }
        },
      };
    }
  }

  async function getJson<T>(url: string, opts: HttpRequestOptions = {}): Promise<T> {
    const res = await request(url, opts);
    throwForStatus(res, scrub, options.clock?.now() ?? new Date());
    return res.json<T>();
  }

  return { request, getJson };
}

/**
 * Classifies a non-2xx response into the closed error set. `now` is the time an HTTP-date
 * `Retry-After` is measured against (pass `ctx.clock.now()`); default the wall clock.
 */
export function throwForStatus(res: HttpResponse, scrub: (m: string) => string = (m) => sanitizeMessage(m), now: Date = new Date()): void {
  if (res.status >= 200 && res.status < 300) return;
  const detail = upstreamMessage(res.text);
  const suffix = detail ? `: ${scrub(detail)}` : '';
  if (res.status === 401 || res.status === 403) {
    throw new AuthError(`The provider rejected the credentials (HTTP ${res.status})${suffix}`, res.status);
  }
  if (res.status === 429) {
    throw new RateLimitedError(`The provider rate-limited the request (HTTP 429)${suffix}`, parseRetryAfter(res.headers['retry-after'], now));
  }
  if (res.status === 408 || res.status === 504) {
    throw new TimeoutError(`The provider timed out (HTTP ${res.status})`);
  }
  throw new UpstreamError(`The provider answered HTTP ${res.status}${suffix}`, res.status);
}

/** Pulls a short message out of common error bodies (`{error:{message}}`, `{message}`, `{detail}`). */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const err = body.error;
    const candidates = [
      typeof err === 'object' && err !== null ? (err as Record<string, unknown>).message : err,
      body.message,
      body.detail,
      body.msg,
    ];
    const found = candidates.find((c) => typeof c === 'string' && c.trim() !== '');
    return typeof found === 'string' ? found.slice(0, 200) : '';
  } catch {
    return '';
  }
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}
