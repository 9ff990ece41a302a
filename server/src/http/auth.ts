import { ForbiddenError, UnauthorizedError } from '@usage-monitor/core';
import type { Access, Scope } from './route.js';

export type Principal =
  | { kind: 'anonymous' }
  | { kind: 'admin'; sessionId: number }
  | { kind: 'token'; tokenId: number; scopes: Scope[] }
  /** A request without a token from a host in HOMEPAGE_ALLOWED_HOSTS. */
  | { kind: 'homepage_host' };

export const ANONYMOUS: Principal = { kind: 'anonymous' };

/** Extracts the bearer token; a malformed Authorization header is a 401, not a silent anonymous. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined || header === '') return null;
  const m = /^Bearer\s+([A-Za-z0-9._~+/=-]{1,512})\s*$/i.exec(header);
  if (!m) throw new UnauthorizedError('The Authorization header must be "Bearer <token>"');
  return m[1]!;
}

/** The access rule of API.md: 401 when nobody is authenticated, 403 when the wrong one is. */
export function authorize(access: Access, principal: Principal): void {
  if (access === 'public') return;
  if (principal.kind === 'admin') return;
  if (access === 'homepage') {
    if (principal.kind === 'homepage_host') return;
    return requireScope(principal, 'usage:read');
  }
  if (access === 'admin') {
    if (principal.kind === 'token') throw new ForbiddenError('API tokens cannot use admin-only routes');
    throw new UnauthorizedError('An admin session is required');
  }
  requireScope(principal, access.scope);
}

function requireScope(principal: Principal, scope: Scope): void {
  if (principal.kind === 'token') {
    if (principal.scopes.includes(scope)) return;
    throw new ForbiddenError(`The token lacks the "${scope}" scope`);
  }
  throw new UnauthorizedError();
}

/** Host header without port, lower-cased (IPv6 brackets kept off). */
export function requestHost(hostHeader: string | undefined): string {
  const h = (hostHeader ?? '').trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']'));
  return h.replace(/:\d+$/, '');
}
