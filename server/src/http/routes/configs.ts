import { metricListSchema, thresholdListSchema } from '@usage-monitor/core';
import { JSON_TYPE, idParam, problemResponses, reply, type Route } from '../route.js';

const connectionRecord = {
  type: 'object',
  required: ['id', 'provider', 'label', 'base_url', 'extra', 'is_enabled', 'is_visible', 'display_order', 'alert_thresholds', 'created_at', 'updated_at', 'api_key_masked', 'available'],
  properties: {
    id: { type: 'integer' },
    provider: { type: 'string' },
    label: { type: 'string' },
    base_url: { type: ['string', 'null'] },
    extra: { type: 'object', description: "The plugin's settings" },
    is_enabled: { type: 'boolean' },
    is_visible: { type: 'boolean' },
    display_order: { type: 'integer' },
    alert_thresholds: thresholdListSchema,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    api_key_masked: { type: 'string' },
    available: { type: 'boolean', description: 'False when the plugin of this connection is not loaded' },
  },
};

const writableFields = {
  label: { type: ['string', 'null'], maxLength: 120, description: 'Blank becomes a unique default' },
  api_key: { type: 'string', minLength: 1, maxLength: 4096, writeOnly: true, description: 'Shorthand for credentials.api_key' },
  credentials: {
    type: 'object',
    writeOnly: true,
    maxProperties: 50,
    description: "Validated against the provider's credentials schema (components.schemas.<Provider>Credentials)",
  },
  base_url: { type: ['string', 'null'], maxLength: 2048, pattern: '^(https?://[^\\s]+)?$', description: "Overrides the plugin's default upstream" },
  extra: { type: 'object', maxProperties: 100, description: "The plugin's settings (components.schemas.<Provider>Settings)" },
  is_enabled: { type: 'boolean' },
  is_visible: { type: 'boolean' },
  display_order: { type: 'integer', minimum: 0, maximum: 1000000 },
  alert_thresholds: thresholdListSchema,
};

export const connectionCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider'],
  properties: { provider: { type: 'string', minLength: 1, maxLength: 60 }, ...writableFields },
};

const connectionPatchSchema = { type: 'object', additionalProperties: false, minProperties: 1, properties: writableFields };

const testResult = {
  type: 'object',
  required: ['status', 'summary', 'metrics', 'raw'],
  properties: { status: { enum: ['healthy', 'degraded'] }, summary: { type: 'string' }, metrics: metricListSchema, raw: {} },
};

export const configRoutes: Route[] = [
  {
    method: 'get',
    path: '/configs',
    operationId: 'listConfigs',
    summary: 'Connections in display order',
    tags: ['configs'],
    access: { scope: 'configs:read' },
    responses: { 200: { description: 'Connections', schema: { type: 'array', items: connectionRecord } }, ...problemResponses(401, 403) },
    handler: async ({ services }) => reply(200, await services.connections.listJson(), JSON_TYPE),
  },
  {
    method: 'post',
    path: '/configs',
    operationId: 'createConfig',
    summary: 'Add a connection',
    tags: ['configs'],
    access: 'admin',
    body: connectionCreateSchema,
    responses: { 201: { description: 'The new connection', schema: connectionRecord }, ...problemResponses(400, 401, 403, 409, 413) },
    handler: async ({ body, services }) => reply(201, await services.connections.create(body)),
  },
  {
    method: 'patch',
    path: '/configs/order',
    operationId: 'reorderConfigs',
    summary: 'Set the display order; listed connections come first in the given order',
    tags: ['configs'],
    access: 'admin',
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['config_ids'],
      properties: { config_ids: { type: 'array', maxItems: 10000, items: { type: 'integer', minimum: 1 } } },
    },
    responses: { 200: { description: 'Connections in the new order', schema: { type: 'array', items: connectionRecord } }, ...problemResponses(400, 401, 403) },
    handler: ({ body, services }) => services.connections.reorder(body.config_ids),
  },
  {
    method: 'post',
    path: '/configs/test',
    operationId: 'testConfig',
    summary: 'Try credentials against the provider without saving anything',
    tags: ['configs'],
    access: 'admin',
    body: connectionCreateSchema,
    responses: { 200: { description: 'What the provider returned', schema: testResult }, ...problemResponses(400, 401, 403, 502, 504) },
    handler: ({ body, services }) => services.connections.testInput(body),
  },
  {
    method: 'patch',
    path: '/configs/{id}',
    operationId: 'updateConfig',
    summary: 'Change a connection; omitted credentials keep the stored ones',
    tags: ['configs'],
    access: 'admin',
    params: idParam(),
    body: connectionPatchSchema,
    responses: { 200: { description: 'The connection', schema: connectionRecord }, ...problemResponses(400, 401, 403, 404, 409) },
    handler: ({ params, body, services }) => services.connections.update(params.id, body),
  },
  {
    method: 'delete',
    path: '/configs/{id}',
    operationId: 'deleteConfig',
    summary: 'Delete a connection and its history',
    tags: ['configs'],
    access: 'admin',
    params: idParam(),
    responses: { 204: { description: 'Deleted' }, ...problemResponses(400, 401, 403, 404) },
    handler: async ({ params, services }) => {
      await services.connections.delete(params.id);
      return reply(204);
    },
  },
  {
    method: 'post',
    path: '/configs/{id}/test',
    operationId: 'testStoredConfig',
    summary: 'Try the stored credentials against the provider',
    tags: ['configs'],
    access: 'admin',
    params: idParam(),
    responses: { 200: { description: 'What the provider returned', schema: testResult }, ...problemResponses(400, 401, 403, 404, 409, 502, 504) },
    handler: ({ params, services }) => services.connections.testStored(params.id),
  },
];
