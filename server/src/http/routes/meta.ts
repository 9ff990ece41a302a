import type { OpenAPIObject } from 'openapi3-ts/oas31';
import type { Route } from '../route.js';

export function metaRoutes(getDocument: () => OpenAPIObject): Route[] {
  return [
    {
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document, generated from the route table',
      tags: ['meta'],
      access: 'public',
      responses: { 200: { description: 'The OpenAPI document', schema: { type: 'object' } } },
      handler: () => getDocument(),
    },
    {
      method: 'get',
      path: '/health',
      operationId: 'getHealth',
      summary: 'Liveness and database reachability',
      tags: ['meta'],
      access: 'public',
      responses: {
        200: {
          description: 'The service is up',
          schema: {
            type: 'object',
            required: ['status', 'version', 'database'],
            properties: { status: { const: 'ok' }, version: { type: 'string' }, database: { enum: ['sqlite', 'postgresql'] } },
          },
        },
      },
      handler: async ({ services }) => {
        await services.db.em().getConnection().execute('select 1');
        return { status: 'ok', version: services.version, database: services.db.dialect };
      },
    },
  ];
}
