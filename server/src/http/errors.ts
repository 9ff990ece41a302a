import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import {
  NotFoundError,
  PayloadTooLargeError,
  TooManyRequestsError,
  UnauthorizedError,
  UsageMonitorError,
  ValidationError,
  sanitizeMessage,
  type FieldError,
} from '@usage-monitor/core';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: FieldError[];
  request_id?: string;
}

export function sendProblem(ctx: Context, problem: Problem, headers: Record<string, string> = {}): void {
  ctx.status = problem.status;
  for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
  ctx.type = 'application/problem+json';
  ctx.body = problem;
}

/** Maps a thrown error to problem details; anything unknown is a logged, generic 500. */
export function errorMiddleware(logger: Logger) {
  return async function problemDetails(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
      if (ctx.status === 405 && ctx.body === undefined) {
        sendProblem(ctx, { type: 'about:blank', title: 'Method not allowed', status: 405, detail: `${ctx.method} is not allowed on ${ctx.path}`, code: 'method_not_allowed', request_id: ctx.state.requestId });
      }
    } catch (raw) {
      const err = normalize(raw);
      const requestId = ctx.state.requestId as string | undefined;
      if (err instanceof UsageMonitorError) {
        const headers: Record<string, string> = {};
        if (err instanceof UnauthorizedError) headers['WWW-Authenticate'] = 'Bearer';
        if (err instanceof TooManyRequestsError) headers['Retry-After'] = String(err.retryAfterSeconds);
        sendProblem(
          ctx,
          {
            type: `https://usage-monitor.dev/problems/${err.code}`,
            title: err.title,
            status: err.httpStatus,
            detail: sanitizeMessage(err.message),
            code: err.code,
            ...(err instanceof ValidationError ? { errors: err.errors } : {}),
            request_id: requestId,
          },
          headers,
        );
        return;
      }
      logger.error({ err: raw, requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
      sendProblem(ctx, {
        type: 'about:blank',
        title: 'Internal server error',
        status: 500,
        detail: 'An unexpected error occurred; the server log has the details under this request id',
        code: 'internal_error',
        request_id: requestId,
      });
    }
  };
}

/** Errors thrown by the body parser (co-body / raw-body) carry an HTTP status; map them into our set. */
function normalize(err: unknown): unknown {
  if (err instanceof UsageMonitorError) return err;
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e?.status ?? e?.statusCode;
  if (status === 413 || e?.type === 'entity.too.large') return new PayloadTooLargeError();
  if (status === 400 && (e?.type === 'entity.parse.failed' || /JSON|Unexpected|invalid/i.test(e?.message ?? ''))) {
    return new ValidationError('The request body is not valid JSON', [{ path: '/body', message: 'is not valid JSON' }]);
  }
  if (status === 415) return new ValidationError('Unsupported body encoding', [{ path: '/body', message: 'unsupported encoding' }]);
  if (typeof status === 'number' && status >= 400 && status < 500 && e?.expose) {
    return new ValidationError(e.message ?? 'Bad request', [{ path: '/body', message: e.message ?? 'is invalid' }]);
  }
  return err;
}
