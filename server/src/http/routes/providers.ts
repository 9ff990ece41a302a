import { isNumericSpec, metricSpecSchema, type MetricSpec, type ProviderPlugin } from '@usage-monitor/core';
import type { Route } from '../route.js';

/** GET /providers row (API.md, compat fields first). */
export function providerInfo(p: ProviderPlugin) {
  // A dynamic-metrics plugin's declared metrics are a placeholder: its connections' metrics come
  // from their settings (metricsFor), so none are published here (capabilities.dynamic_metrics says so).
  const dynamic = p.capabilities?.dynamic_metrics === true;
  const specs: Record<string, MetricSpec> = dynamic ? {} : p.metrics;
  const labels = Object.keys(specs);
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    metrics: labels,
    alert_metrics: labels
      .filter((l) => specs[l]!.alertable ?? isNumericSpec(specs[l]!))
      .map((l) => ({ metric: l, label: l, unit: specs[l]!.unit, direction: specs[l]!.direction })),
    icon: p.icon ?? null,
    docs_url: p.docsUrl ?? null,
    default_base_url: p.defaultBaseUrl,
    auth: {
      kind: p.auth?.kind ?? 'api_key',
      ...(p.auth?.kind === 'oauth' ? { flows: [...(p.auth.device ? ['device'] : []), ...(p.auth.browser ? ['browser'] : [])] } : {}),
    },
    credentials_schema: p.credentials,
    settings_schema: p.settings ?? { type: 'object', properties: {} },
    metric_specs: specs,
    capabilities: { native_history: false, oauth: p.auth?.kind === 'oauth', ...(p.capabilities ?? {}) },
  };
}

export const providerInfoSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'metrics', 'alert_metrics', 'icon', 'auth', 'credentials_schema', 'settings_schema', 'metric_specs', 'capabilities'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    metrics: { type: 'array', items: { type: 'string' } },
    alert_metrics: {
      type: 'array',
      items: {
        type: 'object',
        required: ['metric', 'label', 'unit', 'direction'],
        properties: { metric: { type: 'string' }, label: { type: 'string' }, unit: { type: 'string' }, direction: { enum: ['increasing', 'decreasing'] } },
      },
    },
    icon: { type: ['string', 'null'] },
    docs_url: { type: ['string', 'null'] },
    default_base_url: { type: 'string' },
    auth: { type: 'object', required: ['kind'], properties: { kind: { enum: ['api_key', 'oauth'] }, flows: { type: 'array', items: { enum: ['device', 'browser'] } } } },
    credentials_schema: { type: 'object' },
    settings_schema: { type: 'object' },
    metric_specs: {
      type: 'object',
      additionalProperties: metricSpecSchema,
      description: 'Empty when capabilities.dynamic_metrics is set: each connection defines its metrics in its settings',
    },
    capabilities: { type: 'object', additionalProperties: { type: 'boolean' } },
  },
};

export const providerRoutes: Route[] = [
  {
    method: 'get',
    path: '/providers',
    operationId: 'listProviders',
    summary: 'The loaded provider plugins with their credential, settings and metric schemas',
    tags: ['providers'],
    access: 'public',
    responses: { 200: { description: 'Provider plugins', schema: { type: 'array', items: providerInfoSchema } } },
    handler: ({ services }) => services.registry.listProviders().map((p) => providerInfo(p.plugin)),
  },
];
