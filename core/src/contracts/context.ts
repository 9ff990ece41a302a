/**
 * What a plugin receives. This is everything a plugin may touch: no global fetch, no clock of its
 * own, no process environment. The host (a polling worker, the server, or the conformance kit)
 * builds it.
 */

export interface PluginLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface Clock {
  now(): Date;
}

export interface HttpRequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  /** Query parameters appended to the URL; arrays repeat the key; null/undefined are skipped. */
  query?: Record<string, string | number | boolean | null | undefined | Array<string | number>>;
  /** A JSON body (serialized and sent with `content-type: application/json`). */
  json?: unknown;
  /** A form body (`application/x-www-form-urlencoded`), as OAuth token endpoints expect. */
  form?: Record<string, string>;
  /** A raw string body. */
  body?: string;
  /** Overrides the host's default timeout for this request (never beyond the task's signal). */
  timeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  /** The final URL after redirects. */
  url: string;
  text: string;
  /** Parses the body; throws UpstreamError on malformed JSON. */
  json<T = unknown>(): T;
}

export interface HttpClient {
  /** Sends a request and returns whatever status came back. Network failures and timeouts throw. */
  request(url: string, options?: HttpRequestOptions): Promise<HttpResponse>;
  /**
   * Sends a request and classifies the outcome: 2xx JSON is returned; 401/403 throw AuthError,
   * 429 RateLimitedError (with Retry-After), 5xx and other statuses UpstreamError, a timeout
   * TimeoutError, a malformed body UpstreamError.
   */
  getJson<T = unknown>(url: string, options?: HttpRequestOptions): Promise<T>;
}

export interface PluginContext<Credentials = Record<string, unknown>, Settings = Record<string, unknown>> {
  credentials: Credentials;
  settings: Settings;
  /** The connection's base URL override, else the plugin's default, without a trailing slash. */
  baseUrl: string;
  http: HttpClient;
  clock: Clock;
  /** Aborted when the task times out or the server shuts down. */
  signal: AbortSignal;
  logger: PluginLogger;
}
