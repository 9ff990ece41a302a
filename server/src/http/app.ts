import crypto from 'node:crypto';
import Koa, { type Context, type Next } from 'koa';
import coBody from 'co-body';
import type { OpenAPIObject } from 'openapi3-ts/oas31';
import { UnsupportedMediaTypeError } from '@usage-monitor/core';
import type { Services } from '../container.js';
import { errorMiddleware } from './errors.js';
import { buildOpenApi } from './openapi.js';
import { buildRouter } from './router.js';
import { docsMiddleware } from './docs.js';
import type { Route } from './route.js';
import { resourceRoutes } from './routes/index.js';
import { metaRoutes } from './routes/meta.js';

export interface AppBundle {
  app: Koa;
  /** The mounted router: its layers are what Koa really dispatches to. */
  router: ReturnType<typeof buildRouter>;
  routes: Route[];
  openapi: OpenAPIObject;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;

function pascal(id: string): string {
  return id.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());
}

/** The Koa application (no listen): middleware, the route table, and the OpenAPI document. */
export function createApp(services: Services, extraRoutes: Route[] = []): AppBundle {
  const { logger, settings } = services;
  // The document route serves the document built from the very list it belongs to.
  const routes: Route[] = [...metaRoutes(() => openapi), ...resourceRoutes, ...extraRoutes];

  const schemas: Record<string, Record<string, unknown>> = {};
  for (const { plugin } of services.registry.listProviders()) {
    schemas[`${pascal(plugin.id)}Credentials`] = plugin.credentials;
    schemas[`${pascal(plugin.id)}Settings`] = plugin.settings ?? { type: 'object', properties: {} };
  }
  const openapi = buildOpenApi(routes, { version: services.version, schemas });

  const app = new Koa({ proxy: settings.trustProxy });
  app.silent = true; // errors are logged by the error middleware, once, with the request id

  app.use(async function requestContext(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const id = REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      // Only method, path (no query) and status: nothing a secret could ride in.
      logger.debug({ requestId: id, method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    }
  });

  app.use(async function securityHeaders(ctx: Context, next: Next) {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    await next();
  });

  app.use(async function cors(ctx: Context, next: Next) {
    const origin = ctx.get('origin');
    const allowed = origin !== '' && (settings.corsOrigins.includes(origin) || settings.corsOrigins.includes('*'));
    ctx.vary('Origin');
    if (allowed) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Expose-Headers', 'X-Request-Id, Retry-After, WWW-Authenticate');
    }
    if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) {
      if (allowed) {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
        ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Request-Id');
        ctx.set('Access-Control-Max-Age', '600');
      }
      ctx.status = 204;
      return;
    }
    await next();
  });

  app.use(errorMiddleware(logger));

  // Bodies are JSON only. They are parsed by co-body (the parser koa-body wraps; koa-body itself
  // would add ~14 MB of resident memory for multipart support this API does not offer).
  app.use(async function jsonBody(ctx: Context, next: Next) {
    const hasBody = (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (hasBody && ['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method)) {
      if (!ctx.is('application/json', 'application/*+json')) {
        throw new UnsupportedMediaTypeError(`The request body must be application/json (got ${ctx.get('content-type') || 'no content type'})`);
      }
      (ctx.request as { body?: unknown }).body = await coBody.json(ctx.req, { limit: settings.bodyLimitBytes, strict: true });
    }
    await next();
  });

  const router = buildRouter(routes, services);
  app.use(router.routes() as unknown as Koa.Middleware);
  app.use(router.allowedMethods() as unknown as Koa.Middleware);
  app.use(docsMiddleware);

  return { app, router, routes, openapi };
}
