import type { Context } from 'koa';
import type { Principal } from './auth.js';
import type { Services } from '../container.js';

export const SCOPES = ['configs:read', 'history:read', 'poll:write', 'usage:read', 'analytics:read', 'datasources:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who may call a route (API.md "Access"). */
export type Access = 'public' | 'admin' | 'homepage' | { scope: Scope };

export type Schema = Record<string, unknown>;

export interface ResponseSpec {
  description: string;
  schema?: Schema;
  /** Defaults to application/json. */
  contentType?: string;
}

export interface RequestInput<P = Record<string, unknown>, Q = Record<string, unknown>, B = unknown> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  services: Services;
  /** The Koa context, for the rare handler that must set a header or read the client address. */
  koa: Context;
}

/** What a handler returns: a body (200), or an explicit status with an optional body and headers. */
export type HandlerResult = unknown;

export interface Route<P = any, Q = any, B = any> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path below /api/v1, e.g. `/configs/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  params?: Schema;
  query?: Schema;
  body?: Schema;
  responses: Record<number, ResponseSpec>;
  handler(input: RequestInput<P, Q, B>): Promise<HandlerResult> | HandlerResult;
}

/** Marks a handler result as carrying its own status (so a body that has a `status` field is not mistaken). */
export class Reply {
  constructor(
    readonly status: number,
    readonly body?: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** For handlers that answer with bytes that are already JSON. */
export const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

export const reply = (status: number, body?: unknown, headers?: Record<string, string>) => new Reply(status, body, headers);

/** Small helpers for route schemas. */
export const idParam = (name = 'id'): Schema => ({
  type: 'object',
  additionalProperties: false,
  required: [name],
  properties: { [name]: { type: 'integer', minimum: 1, maximum: 2147483647 } },
});

export const noQuery: Schema = { type: 'object', additionalProperties: false, properties: {} };

export const problemResponses = (...codes: number[]): Record<number, ResponseSpec> =>
  Object.fromEntries(codes.map((c) => [c, { description: PROBLEM_DESCRIPTIONS[c] ?? 'Error', schema: { $ref: '#/components/schemas/Problem' }, contentType: 'application/problem+json' }]));

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input',
  401: 'Missing, invalid, revoked or expired token',
  403: 'The token lacks the required scope or the route is admin-only',
  404: 'Not found',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Body is not JSON',
  429: 'Too many attempts',
  502: 'Upstream error',
  504: 'Upstream timeout',
};
