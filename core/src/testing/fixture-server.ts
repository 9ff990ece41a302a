import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { jsonEqual } from './schema.js';

/**
 * A local HTTP server that answers with recorded upstream responses. Plugins talk to it through
 * their real HTTP client (ctx.baseUrl points here), so a test exercises exactly the requests a
 * plugin sends in production, and nothing reaches the network.
 */

/** What a request must look like to be answered by an entry. Every field is a subset match. */
export interface FixtureRequestMatcher {
  /** Default `GET`. */
  method?: string;
  /** The path relative to the server's base path, e.g. `/key`. A `?a=b` suffix adds to `query`. */
  path: string;
  /** Query parameters that must be present with these values; an array matches a repeated key. */
  query?: Record<string, string | string[]>;
  /** Headers (lower-case names) that must be present with exactly these values. */
  headers?: Record<string, string>;
  /**
   * A deep subset of the request body: JSON bodies are parsed, form bodies become an object of
   * strings; a string matches the raw text exactly.
   */
  body?: unknown;
}

export interface FixtureResponseSpec {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** A JSON body (served with `content-type: application/json`). */
  body?: unknown;
  /** A raw body, instead of `body` (malformed JSON, HTML error pages, ...). */
  body_text?: string;
  /** Waits this long before answering. */
  delay_ms?: number;
  /** Never answers (until the server closes): for timeout tests. */
  hang?: boolean;
}

export interface FixtureEntry {
  /** Shown in reports; the kit uses the file name, e.g. `01-key.json`. */
  name?: string;
  request: FixtureRequestMatcher;
  response: FixtureResponseSpec;
  /** An optional entry may stay unused without failing the case. */
  optional?: boolean;
  /** A repeating entry answers every matching request instead of only the first. */
  repeat?: boolean;
}

export interface RecordedRequest {
  method: string;
  /** The path as received, without the query string. */
  path: string;
  query: Record<string, string | string[]>;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** Parsed JSON, a form body as an object, the raw text, or null when empty. */
  body: unknown;
  /** The name of the entry that answered, or null when none matched. */
  matched: string | null;
}

export interface UnmatchedRequest extends RecordedRequest {
  /** Why no entry matched (one line per candidate). */
  reason: string;
}

export interface FixtureServerOptions {
  /** Prefix of every entry's path (the part of ctx.baseUrl after the host), e.g. `/api/v1`. */
  basePath?: string;
  /** The address to listen on; default `127.0.0.1` (`localhost` is also accepted by plugins' host allow-lists). */
  host?: string;
}

export interface FixtureServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash and without the base path. */
  url: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Requests that no entry matched; they were answered with HTTP 599. */
  unmatched: UnmatchedRequest[];
  /** Entries that never answered a request (optional ones included). */
  unused(): FixtureEntry[];
  /** Stops the server; hanging and delayed responses are cut off. */
  close(): Promise<void>;
}

/**
 * Any string `{{base_url}}` in entries (and in a case's settings and credentials) becomes the
 * server URL plus the base path: the URL entry paths are relative to, and what ctx.baseUrl is.
 */
export const BASE_URL_PLACEHOLDER = '{{base_url}}';

/** Replaces `{{base_url}}` in every string of a JSON value. */
export function substituteBaseUrl<T>(value: T, baseUrl: string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.split(BASE_URL_PLACEHOLDER).join(baseUrl);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** The status unmatched requests get: outside the range any real upstream uses. */
export const UNMATCHED_STATUS = 599;

function joinPath(base: string, p: string): string {
  const b = base.replace(/\/+$/, '');
  if (!b) return p.startsWith('/') ? p : `/${p}`;
  return `${b}${p.startsWith('/') ? '' : '/'}${p}`;
}

function parseQuery(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const all = params.getAll(key);
    out[key] = all.length === 1 ? all[0]! : all;
  }
  return out;
}

function parseBody(text: string, contentType: string): unknown {
  if (text === '') return null;
  if (contentType.includes('application/x-www-form-urlencoded')) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Whether `actual` contains `expected`: objects by key (recursively), everything else equal. */
export function isDeepSubset(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'object' && expected !== null && !Array.isArray(expected)) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    const a = actual as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).every(([k, v]) => k in a && isDeepSubset(v, a[k]));
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((v, i) => isDeepSubset(v, actual[i]));
  }
  return jsonEqual(expected, actual);
}

const short = (v: unknown, max = 80) => {
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? String(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** Why `req` does not match `m`, or null when it does. Header values are not echoed in full. */
function mismatch(m: FixtureRequestMatcher, basePath: string, req: RecordedRequest): string | null {
  const [rawPath, rawQuery] = m.path.split('?', 2) as [string, string | undefined];
  const wantPath = joinPath(basePath, rawPath);
  const reasons: string[] = [];
  const method = (m.method ?? 'GET').toUpperCase();
  if (method !== req.method) reasons.push(`method ${method} expected, got ${req.method}`);
  if (wantPath !== req.path) reasons.push(`path ${wantPath} expected, got ${req.path}`);
  const query: Record<string, string | string[]> = { ...(rawQuery ? parseQuery(new URLSearchParams(rawQuery)) : {}), ...(m.query ?? {}) };
  for (const [k, v] of Object.entries(query)) {
    const got = req.query[k];
    if (!jsonEqual(got, v)) reasons.push(`query ${k}=${short(v)} expected, got ${got === undefined ? 'none' : short(got)}`);
  }
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    const got = req.headers[k.toLowerCase()];
    if (got === undefined) reasons.push(`header ${k.toLowerCase()} missing`);
    else if (got !== v) reasons.push(`header ${k.toLowerCase()} has a different value`);
  }
  if (m.body !== undefined && !isDeepSubset(m.body, req.body)) {
    reasons.push(`body ${short(m.body)} expected (deep subset), got ${short(req.body)}`);
  }
  return reasons.length > 0 ? reasons.join('; ') : null;
}

/**
 * Starts a fixture server on 127.0.0.1 (a free port). A request is answered by the first entry, in
 * list order, that matches it and has not answered yet (`repeat` entries answer again). Unmatched
 * requests get HTTP 599 with a JSON body naming the mismatch, and are recorded in `unmatched`.
 */
export async function startFixtureServer(responses: readonly FixtureEntry[], opts: FixtureServerOptions = {}): Promise<FixtureServer> {
  const basePath = opts.basePath ?? '';
  const host = opts.host ?? '127.0.0.1';
  // Filled in once the port is known, before the first request can arrive.
  let entries: Array<{ entry: FixtureEntry; name: string; served: number }> = [];
  const requests: RecordedRequest[] = [];
  const unmatched: UnmatchedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fixture.invalid');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const recorded: RecordedRequest = {
        method: (req.method ?? 'GET').toUpperCase(),
        path: u.pathname,
        query: parseQuery(u.searchParams),
        headers,
        body: parseBody(Buffer.concat(chunks).toString('utf8'), headers['content-type'] ?? ''),
        matched: null,
      };
      requests.push(recorded);

      const reasons: string[] = [];
      const hit = entries.find((e) => {
        if (e.served > 0 && !e.entry.repeat) return false;
        const why = mismatch(e.entry.request, basePath, recorded);
        if (why) reasons.push(`${e.name}: ${why}`);
        return why === null;
      });
      if (!hit) {
        const exhausted = entries.filter((e) => e.served > 0 && !e.entry.repeat && mismatch(e.entry.request, basePath, recorded) === null);
        for (const e of exhausted) reasons.push(`${e.name}: matches, but was already served (set "repeat": true to serve it again)`);
        const reason = reasons.length > 0 ? reasons.join('\n') : 'no recorded responses left';
        unmatched.push({ ...recorded, reason });
        res.writeHead(UNMATCHED_STATUS, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              message: `fixture server: no recorded response matches ${recorded.method} ${recorded.path}`,
              candidates: reasons,
            },
          }),
        );
        return;
      }
      hit.served += 1;
      recorded.matched = hit.name;
      const r = hit.entry.response;
      if (r.hang) return; // never answered; close() destroys the socket
      const send = () => {
        const body = r.body_text ?? (r.body === undefined ? '' : JSON.stringify(r.body));
        const resHeaders: Record<string, string> = {
          ...(r.body_text === undefined && r.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
        };
        res.writeHead(r.status ?? 200, resHeaders);
        res.end(body);
      };
      if (r.delay_ms && r.delay_ms > 0) {
        const t = setTimeout(() => {
          timers.delete(t);
          if (!res.destroyed) send();
        }, r.delay_ms);
        timers.add(t);
      } else send();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  entries = responses.map((e, i) => ({ entry: substituteBaseUrl(e, url + basePath.replace(/\/+$/, '')), name: e.name ?? `#${i + 1}`, served: 0 }));
  let closing: Promise<void> | undefined;

  return {
    url,
    requests,
    unmatched,
    unused: () => entries.filter((e) => e.served === 0).map((e) => ({ ...e.entry, name: e.name })),
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
