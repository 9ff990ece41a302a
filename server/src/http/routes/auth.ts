import type { Route } from '../route.js';
import { problemResponses, reply } from '../route.js';

const password = { type: 'string', minLength: 12, maxLength: 1024, description: '12 to 1024 characters' };
const code = { type: 'string', minLength: 1, maxLength: 200 };

export const sessionSchema = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_at'],
  properties: {
    access_token: { type: 'string' },
    token_type: { const: 'bearer' },
    expires_at: { type: 'string', format: 'date-time' },
  },
};

const session = { description: 'A new admin session', schema: sessionSchema };

export const authRoutes: Route[] = [
  {
    method: 'get',
    path: '/auth/status',
    operationId: 'getAuthStatus',
    summary: 'Whether an admin password is set',
    tags: ['auth'],
    access: 'public',
    responses: {
      200: {
        description: 'Setup state',
        schema: {
          type: 'object',
          required: ['is_configured', 'setup_required'],
          properties: { is_configured: { type: 'boolean' }, setup_required: { type: 'boolean' } },
        },
      },
    },
    handler: ({ services }) => services.auth.status(),
  },
  {
    method: 'post',
    path: '/auth/setup',
    operationId: 'setupAdmin',
    summary: 'Set the admin password with the one-time setup code from the server log',
    tags: ['auth'],
    access: 'public',
    body: { type: 'object', additionalProperties: false, required: ['code', 'password'], properties: { code, password } },
    responses: { 200: session, ...problemResponses(400, 409, 413) },
    handler: ({ body, services }) => services.auth.setup(body.code, body.password),
  },
  {
    method: 'post',
    path: '/auth/login',
    operationId: 'login',
    summary: 'Log in with the admin password',
    tags: ['auth'],
    access: 'public',
    body: { type: 'object', additionalProperties: false, required: ['password'], properties: { password: { type: 'string', minLength: 1, maxLength: 1024 } } },
    responses: { 200: session, ...problemResponses(400, 401, 409, 429) },
    handler: ({ body, services, koa }) => services.auth.login(body.password, koa.ip || 'unknown'),
  },
  {
    method: 'post',
    path: '/auth/logout',
    operationId: 'logout',
    summary: 'Revoke the presented session',
    tags: ['auth'],
    access: 'admin',
    responses: { 204: { description: 'The session is revoked' }, ...problemResponses(401, 403) },
    handler: async ({ principal, services }) => {
      if (principal.kind === 'admin') await services.auth.logout(principal.sessionId);
      return reply(204);
    },
  },
  {
    method: 'post',
    path: '/auth/reset/request',
    operationId: 'requestPasswordReset',
    summary: 'Write a one-time reset code to the server log',
    tags: ['auth'],
    access: 'public',
    responses: { 202: { description: 'A reset code was written to the server log' } },
    handler: async ({ services }) => {
      await services.auth.requestReset();
      return reply(202);
    },
  },
  {
    method: 'post',
    path: '/auth/reset/complete',
    operationId: 'completePasswordReset',
    summary: 'Set a new password with the reset code; every earlier session is revoked',
    tags: ['auth'],
    access: 'public',
    body: { type: 'object', additionalProperties: false, required: ['code', 'password'], properties: { code, password } },
    responses: { 200: session, ...problemResponses(400) },
    handler: ({ body, services }) => services.auth.completeReset(body.code, body.password),
  },
];
