/**
 * The closed set of errors of usage-monitor. Every error carries a stable `code` (stored in
 * snapshots, returned in problem+json bodies) and the HTTP status the API answers with when the
 * error reaches a request. Plugins throw the upstream classes; the server throws the request ones.
 *
 * Messages must never contain secrets: callers pass sanitized text, and `sanitizeMessage` is the
 * last line of defence before a message is stored or returned.
 */

export const ERROR_CODES = [
  // upstream (plugin) errors
  'auth_error',
  'rate_limited',
  'upstream_error',
  'timeout',
  'schema_drift',
  'config_error',
  // request errors
  'validation_error',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'too_many_requests',
  'internal_error',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  /** JSON pointer-like location, e.g. `/body/label` or `/query/limit`. */
  path: string;
  message: string;
}

export abstract class UsageMonitorError extends Error {
  abstract readonly code: ErrorCode;
  abstract readonly httpStatus: number;
  /** A short, stable human title for problem details. */
  abstract readonly title: string;
}

// ---------------------------------------------------------------- upstream errors

/** The upstream rejected the credentials (401/403): the connection must be re-authorized. */
export class AuthError extends UsageMonitorError {
  readonly code = 'auth_error';
  readonly httpStatus = 502;
  readonly title = 'Upstream rejected the credentials';
  constructor(message = 'The provider rejected the credentials', readonly upstreamStatus?: number) {
    super(message);
    this.name = 'AuthError';
  }
}

/** The upstream answered 429. `retryAfterMs` is how long to wait before the next attempt. */
export class RateLimitedError extends UsageMonitorError {
  readonly code = 'rate_limited';
  readonly httpStatus = 502;
  readonly title = 'Upstream rate limit';
  constructor(message = 'The provider rate-limited the request', readonly retryAfterMs: number | null = null) {
    super(message);
    this.name = 'RateLimitedError';
  }
}

/** 5xx, unexpected 4xx, network failures, malformed bodies. */
export class UpstreamError extends UsageMonitorError {
  readonly code = 'upstream_error';
  readonly httpStatus = 502;
  readonly title = 'Upstream error';
  constructor(message = 'The provider request failed', readonly upstreamStatus?: number) {
    super(message);
    this.name = 'UpstreamError';
  }
}

export class TimeoutError extends UsageMonitorError {
  readonly code = 'timeout';
  readonly httpStatus = 504;
  readonly title = 'Upstream timeout';
  constructor(message = 'The provider did not answer in time') {
    super(message);
    this.name = 'TimeoutError';
  }
}

/** The response no longer has the fields the plugin needs. */
export class SchemaDriftError extends UsageMonitorError {
  readonly code = 'schema_drift';
  readonly httpStatus = 502;
  readonly title = 'Unexpected upstream response';
  constructor(message = 'The provider response is missing expected fields') {
    super(message);
    this.name = 'SchemaDriftError';
  }
}

/** The connection's settings or credentials cannot work (bad URL, blocked host, missing field). */
export class ConfigError extends UsageMonitorError {
  readonly code = 'config_error';
  readonly httpStatus = 400;
  readonly title = 'Invalid configuration';
  constructor(message = 'The connection is misconfigured', readonly field?: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

// ---------------------------------------------------------------- request errors

export class ValidationError extends UsageMonitorError {
  readonly code = 'validation_error';
  readonly httpStatus = 400;
  readonly title = 'Invalid request';
  constructor(message: string, readonly errors: FieldError[] = []) {
    super(message);
    this.name = 'ValidationError';
  }
}

export class UnauthorizedError extends UsageMonitorError {
  readonly code = 'unauthorized';
  readonly httpStatus = 401;
  readonly title = 'Unauthorized';
  constructor(message = 'A valid bearer token is required') {
    super(message);
    this.name = 'UnauthorizedError';
  }
}

export class ForbiddenError extends UsageMonitorError {
  readonly code = 'forbidden';
  readonly httpStatus = 403;
  readonly title = 'Forbidden';
  constructor(message = 'The token does not grant access to this route') {
    super(message);
    this.name = 'ForbiddenError';
  }
}

export class NotFoundError extends UsageMonitorError {
  readonly code = 'not_found';
  readonly httpStatus = 404;
  readonly title = 'Not found';
  constructor(message = 'Not found') {
    super(message);
    this.name = 'NotFoundError';
  }
}

export class ConflictError extends UsageMonitorError {
  readonly code = 'conflict';
  readonly httpStatus = 409;
  readonly title = 'Conflict';
  constructor(message: string) {
    super(message);
    this.name = 'ConflictError';
  }
}

export class PayloadTooLargeError extends UsageMonitorError {
  readonly code = 'payload_too_large';
  readonly httpStatus = 413;
  readonly title = 'Payload too large';
  constructor(message = 'The request body is too large') {
    super(message);
    this.name = 'PayloadTooLargeError';
  }
}

export class UnsupportedMediaTypeError extends UsageMonitorError {
  readonly code = 'unsupported_media_type';
  readonly httpStatus = 415;
  readonly title = 'Unsupported media type';
  constructor(message = 'The request body must be application/json') {
    super(message);
    this.name = 'UnsupportedMediaTypeError';
  }
}

export class TooManyRequestsError extends UsageMonitorError {
  readonly code = 'too_many_requests';
  readonly httpStatus = 429;
  readonly title = 'Too many requests';
  constructor(message: string, readonly retryAfterSeconds: number) {
    super(message);
    this.name = 'TooManyRequestsError';
  }
}

// ---------------------------------------------------------------- transport across threads

/** Upstream errors as they cross a worker-thread boundary or are stored in a snapshot. */
export interface SerializedError {
  code: ErrorCode;
  message: string;
  retryAfterMs?: number | null;
  upstreamStatus?: number | null;
}

const UPSTREAM_CODES = new Set<ErrorCode>(['auth_error', 'rate_limited', 'upstream_error', 'timeout', 'schema_drift', 'config_error']);

/** Turns anything thrown by a plugin into a stored-safe error. Unknown throws become upstream errors. */
export function serializeError(err: unknown, secrets: readonly string[] = []): SerializedError {
  if (err instanceof UsageMonitorError && UPSTREAM_CODES.has(err.code)) {
    const out: SerializedError = { code: err.code, message: sanitizeMessage(err.message, secrets) };
    if (err instanceof RateLimitedError) out.retryAfterMs = err.retryAfterMs;
    if (err instanceof AuthError || err instanceof UpstreamError) out.upstreamStatus = err.upstreamStatus ?? null;
    return out;
  }
  if (isAbortError(err)) return { code: 'timeout', message: 'The provider did not answer in time' };
  const message = err instanceof Error ? `Plugin failed: ${err.message}` : 'Plugin failed';
  return { code: 'upstream_error', message: sanitizeMessage(message, secrets) };
}

export function deserializeError(e: SerializedError): UsageMonitorError {
  switch (e.code) {
    case 'auth_error':
      return new AuthError(e.message, e.upstreamStatus ?? undefined);
    case 'rate_limited':
      return new RateLimitedError(e.message, e.retryAfterMs ?? null);
    case 'timeout':
      return new TimeoutError(e.message);
    case 'schema_drift':
      return new SchemaDriftError(e.message);
    case 'config_error':
      return new ConfigError(e.message);
    default:
      return new UpstreamError(e.message, e.upstreamStatus ?? undefined);
  }
}

export function isAbortError(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    ((err as { name?: string }).name === 'AbortError' || (err as { name?: string }).name === 'TimeoutError') &&
    !(err instanceof UsageMonitorError)
  );
}

const MAX_MESSAGE = 500;
// Patterns of things that look like credentials even when we were not told the exact value.
const SECRET_PATTERNS: RegExp[] = [
  /\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}/g, // OpenAI/Anthropic/OpenRouter-style keys
  /\budt_[A-Za-z0-9_-]{8,}/g, // our own API tokens
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}/g, // JWTs
  /([?&](?:api_key|apikey|key|token|access_token|refresh_token)=)[^&\s]+/gi,
];

/**
 * Removes known secret values and anything shaped like a credential from a message, and bounds
 * its length. Applied to every error message before it is stored, logged or returned.
 */
export function sanitizeMessage(message: string, secrets: readonly string[] = []): string {
  let out = String(message);
  for (const s of secrets) {
    if (typeof s === 'string' && s.length >= 4) out = out.split(s).join('[REDACTED]');
  }
  for (const re of SECRET_PATTERNS) {
    out = out.replace(re, (match, prefix: unknown) =>
      typeof prefix === 'string' && match.startsWith(prefix) && /[?&]/.test(prefix) ? `${prefix}[REDACTED]` : '[REDACTED]',
    );
  }
  if (out.length > MAX_MESSAGE) out = `${out.slice(0, MAX_MESSAGE - 1)}…`;
  return out;
}
