import { Router } from '@koa/router';
import type { Context } from 'koa';
import type { ValidateFunction } from 'ajv';
import { ANONYMOUS, authorize, bearerToken, requestHost, type Principal } from './auth.js';
import { Reply, noQuery, type Route } from './route.js';
import { assertValid, bodyAjv, paramAjv } from './validation.js';
import type { Services } from '../container.js';

export const API_PREFIX = '/api/v1';

/** `/configs/{id}` -> `/configs/:id` */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}

interface Compiled {
  params?: ValidateFunction;
  query: ValidateFunction;
  body?: ValidateFunction;
}

/**
 * Mounts the route table: for each route, the access rule, then schema validation of params, query
 * and body (compiled now, so a bad schema fails startup), then the thin handler.
 */
export function buildRouter(routes: Route[], services: Services): Router {
  const router = new Router({ prefix: API_PREFIX });
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) throw new Error(`Duplicate route ${key}`);
    seen.add(key);
    let compiled: Compiled;
    try {
      compiled = {
        params: route.params ? paramAjv.compile(route.params) : undefined,
        query: paramAjv.compile(route.query ?? noQuery),
        body: route.body ? bodyAjv.compile(route.body) : undefined,
      };
    } catch (err) {
      throw new Error(`Route ${route.operationId} has an invalid schema: ${(err as Error).message}`);
    }
    router[route.method](koaPath(route.path), async (ctx: Context) => {
      const principal = await resolvePrincipal(ctx, route, services);
      authorize(route.access, principal);
      const params: Record<string, unknown> = { ...(ctx as unknown as { params: Record<string, string> }).params };
      if (compiled.params) assertValid(compiled.params, params, 'params');
      const query: Record<string, unknown> = { ...ctx.query };
      assertValid(compiled.query, query, 'query');
      let body: unknown = undefined;
      if (compiled.body) {
        // No body at all validates as an empty object, so required fields are named in the error.
        body = (ctx.request as { body?: unknown }).body ?? {};
        assertValid(compiled.body, body, 'body');
      }
      const result = await route.handler({ params, query, body, principal, services, koa: ctx });
      if (result instanceof Reply) {
        ctx.status = result.status;
        for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
        if (result.body !== undefined) ctx.body = result.body;
      } else if (result === undefined) {
        ctx.status = 204;
      } else {
        ctx.status = 200;
        ctx.body = result;
      }
    });
  }
  return router;
}

async function resolvePrincipal(ctx: Context, route: Route, services: Services): Promise<Principal> {
  if (route.access === 'public') return ANONYMOUS;
  const token = bearerToken(ctx.get('authorization') || undefined);
  if (token === null) {
    if (route.access === 'homepage' && services.settings.homepageAllowedHosts.includes(requestHost(ctx.get('host')))) {
      return { kind: 'homepage_host' };
    }
    return ANONYMOUS;
  }
  return services.auth.principalForToken(token);
}
