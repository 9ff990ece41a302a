import { ValidationError, snapshotSchema } from '@usage-monitor/core';
import { JSON_TYPE, idParam, problemResponses, reply, type Route } from '../route.js';

const nullableSnapshot = { anyOf: [snapshotSchema, { type: 'null' }] };

const healthSchema = {
  type: 'object',
  required: ['status', 'last_attempt_at', 'last_success_at', 'last_failure_at', 'consecutive_failures', 'latest_error', 'age_seconds', 'is_stale'],
  properties: {
    status: { enum: ['healthy', 'stale', 'error', 'never_connected'] },
    last_attempt_at: { type: ['string', 'null'], format: 'date-time' },
    last_success_at: { type: ['string', 'null'], format: 'date-time' },
    last_failure_at: { type: ['string', 'null'], format: 'date-time' },
    consecutive_failures: { type: 'integer' },
    latest_error: { type: ['string', 'null'] },
    age_seconds: { type: ['integer', 'null'] },
    is_stale: { type: 'boolean' },
  },
};

const alertState = { enum: ['normal', 'warning', 'critical', 'exhausted'] };

const usageRow = {
  type: 'object',
  required: ['config', 'latest', 'last_good', 'health', 'alerts', 'alert_state'],
  properties: {
    config: { type: 'object' },
    latest: nullableSnapshot,
    last_good: { ...nullableSnapshot, description: 'The last successful snapshot, non-null only while health is stale' },
    health: healthSchema,
    alerts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['metric', 'metric_type', 'value', 'unit', 'direction', 'alert_state', 'thresholds'],
        properties: {
          metric: { type: 'string' },
          metric_type: { type: ['string', 'null'] },
          value: { type: ['number', 'null'] },
          unit: { type: ['string', 'null'] },
          direction: { enum: ['increasing', 'decreasing'] },
          alert_state: alertState,
          thresholds: { type: 'object' },
        },
      },
    },
    alert_state: alertState,
  },
};

const homepageSchema = {
  type: 'object',
  required: ['configured_providers', 'healthy_providers', 'degraded_providers', 'latest_check', 'summary', 'metrics', 'list'],
  properties: {
    configured_providers: { type: 'integer' },
    healthy_providers: { type: 'integer' },
    degraded_providers: { type: 'integer' },
    latest_check: { type: ['string', 'null'], format: 'date-time' },
    summary: { type: 'string' },
    metrics: { type: 'object', additionalProperties: { type: ['number', 'string', 'null'] } },
    list: {
      type: 'array',
      items: {
        type: 'object',
        required: ['provider', 'config_id', 'label', 'value', 'status'],
        properties: { provider: { type: 'string' }, config_id: { type: 'integer' }, label: { type: 'string' }, value: { type: 'string' }, status: { type: 'string' } },
      },
    },
  },
};

const DAY_MS = 86_400_000;

export const usageRoutes: Route[] = [
  {
    method: 'get',
    path: '/usage',
    operationId: 'getUsage',
    summary: 'Current state of every connection: latest snapshot, health, last-known-good and alerts',
    tags: ['usage'],
    access: { scope: 'usage:read' },
    responses: { 200: { description: 'One row per connection, in display order', schema: { type: 'array', items: usageRow } }, ...problemResponses(401, 403) },
    handler: async ({ services }) => reply(200, await services.usage.usageJson(), JSON_TYPE),
  },
  {
    method: 'get',
    path: '/homepage',
    operationId: 'getHomepage',
    summary: 'Flat payload for the gethomepage.dev customapi widget',
    description:
      'Hosts listed in HOMEPAGE_ALLOWED_HOSTS may read this without a token. That check trusts the Host header: use it on a trusted network or behind a proxy that sets Host.',
    tags: ['usage'],
    access: 'homepage',
    responses: { 200: { description: 'Widget payload', schema: homepageSchema }, ...problemResponses(401, 403) },
    handler: ({ services }) => services.usage.homepage(),
  },
  {
    method: 'get',
    path: '/configs/{id}/history',
    operationId: 'getConfigHistory',
    summary: 'Snapshots of a connection, oldest first',
    description: 'The newest `limit` snapshots in the range. `from`/`to` override `hours` (the last N hours up to now).',
    tags: ['usage'],
    access: { scope: 'history:read' },
    params: idParam(),
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        hours: { type: 'integer', minimum: 1, maximum: 24 * 366 * 5, default: 168 },
        limit: { type: 'integer', minimum: 1, maximum: 5000, default: 500 },
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
      },
    },
    responses: { 200: { description: 'Snapshots', schema: { type: 'array', items: snapshotSchema } }, ...problemResponses(400, 401, 403, 404) },
    handler: async ({ params, query, services }) => {
      await services.connections.get(params.id);
      const now = services.clock.now();
      const to = query.to ? new Date(query.to) : now;
      const from = query.from ? new Date(query.from) : new Date(to.getTime() - query.hours * 3600_000);
      if (from > to) {
        throw new ValidationError('/query/from must not be after /query/to', [{ path: '/query/from', message: 'must not be after to' }]);
      }
      if (to.getTime() - from.getTime() > 5 * 366 * DAY_MS) {
        throw new ValidationError('The range is longer than five years', [{ path: '/query/from', message: 'range longer than five years' }]);
      }
      return services.polling.history(params.id, from, to, query.limit);
    },
  },
];

export const pollRoutes: Route[] = [
  {
    method: 'post',
    path: '/configs/{id}/poll',
    operationId: 'pollConfig',
    summary: 'Poll one connection now',
    tags: ['poll'],
    access: { scope: 'poll:write' },
    params: idParam(),
    responses: { 200: { description: 'The new snapshot (status error when the provider failed)', schema: snapshotSchema }, ...problemResponses(400, 401, 403, 404, 409, 429) },
    handler: ({ params, services }) => services.poll.pollConnection(params.id),
  },
  {
    method: 'post',
    path: '/poll',
    operationId: 'pollAll',
    summary: 'Poll every enabled connection now',
    tags: ['poll'],
    access: { scope: 'poll:write' },
    responses: { 200: { description: 'One snapshot per polled connection', schema: { type: 'array', items: snapshotSchema } }, ...problemResponses(401, 403) },
    handler: ({ services }) => services.poll.pollAll('manual'),
  },
  {
    method: 'get',
    path: '/poll/status',
    operationId: 'getPollStatus',
    summary: 'Background polling state and the last poll run',
    tags: ['poll'],
    access: { scope: 'poll:write' },
    responses: {
      200: {
        description: 'Polling state',
        schema: {
          type: 'object',
          required: ['auto_poll_enabled', 'interval_seconds', 'is_polling', 'last_polled_at', 'next_poll_at', 'last_run'],
          properties: {
            auto_poll_enabled: { type: 'boolean' },
            interval_seconds: { type: 'integer' },
            is_polling: { type: 'boolean' },
            last_polled_at: { type: ['string', 'null'], format: 'date-time' },
            next_poll_at: { type: ['string', 'null'], format: 'date-time' },
            last_run: {
              anyOf: [
                {
                  type: 'object',
                  required: ['trigger', 'started_at', 'finished_at', 'polled', 'succeeded', 'failed'],
                  properties: {
                    trigger: { enum: ['manual', 'schedule', 'single'] },
                    started_at: { type: 'string', format: 'date-time' },
                    finished_at: { type: ['string', 'null'], format: 'date-time' },
                    polled: { type: 'integer' },
                    succeeded: { type: 'integer' },
                    failed: { type: 'integer' },
                  },
                },
                { type: 'null' },
              ],
            },
          },
        },
      },
      ...problemResponses(401, 403),
    },
    handler: async ({ services }) => {
      const [lastPolled, next, lastRun] = await Promise.all([services.polling.lastAttemptAt(), services.scheduler.nextPollAt(), services.polling.lastRun()]);
      return {
        auto_poll_enabled: services.settings.autoPollEnabled,
        interval_seconds: Math.round(services.poll.intervalMs / 1000),
        is_polling: services.poll.isPolling,
        last_polled_at: lastPolled?.toISOString() ?? null,
        next_poll_at: next?.toISOString() ?? null,
        last_run: lastRun,
      };
    },
  },
];
