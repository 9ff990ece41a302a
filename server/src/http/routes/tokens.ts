import { SCOPES, idParam, problemResponses, reply, type Route } from '../route.js';

const tokenRecord = {
  type: 'object',
  required: ['id', 'token_id', 'name', 'token_prefix', 'scopes', 'state', 'expires_at', 'revoked_at', 'last_used_at', 'created_at'],
  properties: {
    id: { type: 'integer' },
    token_id: { type: 'integer' },
    name: { type: 'string' },
    token_prefix: { type: 'string' },
    scopes: { type: 'array', items: { enum: [...SCOPES] } },
    state: { enum: ['active', 'revoked', 'expired'] },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    last_used_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const tokenRoutes: Route[] = [
  {
    method: 'get',
    path: '/api-tokens',
    operationId: 'listApiTokens',
    summary: 'List API tokens (never their plaintext)',
    tags: ['api-tokens'],
    access: 'admin',
    responses: { 200: { description: 'Token records', schema: { type: 'array', items: tokenRecord } }, ...problemResponses(401, 403) },
    handler: ({ services }) => services.apiTokens.list(),
  },
  {
    method: 'post',
    path: '/api-tokens',
    operationId: 'createApiToken',
    summary: 'Create an API token; the plaintext is returned only in this response',
    tags: ['api-tokens'],
    access: 'admin',
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'scopes'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 120, pattern: '\\S' },
        scopes: { type: 'array', minItems: 1, maxItems: 20, items: { enum: [...SCOPES] } },
        expires_at: { type: ['string', 'null'], format: 'date-time' },
      },
    },
    responses: {
      201: {
        description: 'The token record with its plaintext `token`',
        schema: { ...tokenRecord, required: [...tokenRecord.required, 'token'], properties: { ...tokenRecord.properties, token: { type: 'string' } } },
      },
      ...problemResponses(400, 401, 403),
    },
    handler: async ({ body, services }) => reply(201, await services.apiTokens.create(body)),
  },
  {
    method: 'post',
    path: '/api-tokens/{token_id}/revoke',
    operationId: 'revokeApiToken',
    summary: 'Revoke an API token (idempotent)',
    tags: ['api-tokens'],
    access: 'admin',
    params: idParam('token_id'),
    responses: { 204: { description: 'Revoked' }, ...problemResponses(400, 401, 403, 404) },
    handler: async ({ params, services }) => {
      await services.apiTokens.revoke(params.token_id);
      return reply(204);
    },
  },
];
