import { OpenApiBuilder, type OpenAPIObject, type OperationObject, type ParameterObject, type SchemaObject } from 'openapi3-ts/oas31';
import type { Route, Schema } from './route.js';
import { API_PREFIX } from './router.js';

export interface OpenApiExtras {
  version: string;
  /** Extra component schemas (provider credential and settings schemas). */
  schemas: Record<string, Schema>;
}

export const problemSchema: Schema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    request_id: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

function accessText(route: Route): string {
  const a = route.access;
  if (a === 'public') return 'Access: public.';
  if (a === 'admin') return 'Access: admin session only (API tokens get 403).';
  if (a === 'homepage') return 'Access: hosts in HOMEPAGE_ALLOWED_HOSTS without a token, else scope `usage:read`.';
  return `Access: admin session or an API token with scope \`${a.scope}\`.`;
}

function parameters(schema: Schema | undefined, where: 'path' | 'query'): ParameterObject[] {
  if (!schema) return [];
  const props = (schema.properties ?? {}) as Record<string, SchemaObject>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' ? true : required.has(name),
    ...(s.description ? { description: s.description } : {}),
    schema: s,
  }));
}

/** Builds the OpenAPI 3.1 document from the same route table the router mounts. */
export function buildOpenApi(routes: Route[], extras: OpenApiExtras): OpenAPIObject {
  const builder = OpenApiBuilder.create()
    .addOpenApiVersion('3.1.0')
    .addTitle('usage-monitor API')
    .addVersion(extras.version)
    .addDescription(
      'Self-hosted monitor for API and AI-provider usage. Errors are RFC 9457 problem details (`application/problem+json`). ' +
        'Authenticate with `Authorization: Bearer <admin session or udt_ API token>`.',
    )
    .addServer({ url: API_PREFIX })
    .addSecurityScheme('bearer', { type: 'http', scheme: 'bearer', description: 'An admin session token or a udt_ API token' })
    .addSchema('Problem', problemSchema as SchemaObject);
  for (const [name, schema] of Object.entries(extras.schemas)) builder.addSchema(name, schema as SchemaObject);

  const paths: Record<string, Record<string, OperationObject>> = {};
  for (const route of routes) {
    const op: OperationObject = {
      operationId: route.operationId,
      summary: route.summary,
      description: [route.description, accessText(route)].filter(Boolean).join('\n\n'),
      tags: route.tags,
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, spec]) => [
          status,
          spec.schema
            ? { description: spec.description, content: { [spec.contentType ?? 'application/json']: { schema: spec.schema as SchemaObject } } }
            : { description: spec.description },
        ]),
      ),
      security: route.access === 'public' ? [] : route.access === 'homepage' ? [{}, { bearer: [] }] : [{ bearer: [] }],
      'x-access': typeof route.access === 'object' ? `scope:${route.access.scope}` : route.access,
    };
    if (route.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: route.body as SchemaObject } } };
    }
    (paths[route.path] ??= {})[route.method] = op;
  }
  for (const [path, item] of Object.entries(paths)) builder.addPath(path, item);
  return builder.getSpec();
}
