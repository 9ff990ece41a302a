import { metricSpecSchema } from './metric-spec.js';

/**
 * JSON Schemas of plugin descriptors, checked by the loader and the conformance kit. Functions are
 * checked separately (JSON Schema cannot see them).
 */
export const PLUGIN_ID_PATTERN = '^[a-z][a-z0-9]*(-[a-z0-9]+)*$';

export const providerDescriptorSchema = {
  $id: 'usage-monitor:provider-descriptor',
  type: 'object',
  required: ['apiVersion', 'id', 'name', 'description', 'credentials', 'defaultBaseUrl', 'metrics'],
  properties: {
    apiVersion: { const: 1 },
    kind: { const: 'provider' },
    id: { type: 'string', pattern: PLUGIN_ID_PATTERN, maxLength: 60 },
    name: { type: 'string', minLength: 1, maxLength: 80 },
    description: { type: 'string', minLength: 1, maxLength: 1000 },
    icon: { type: 'string', maxLength: 20000 },
    docsUrl: { type: 'string', pattern: '^https?://' },
    credentials: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
    settings: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
    defaultBaseUrl: { type: 'string', pattern: '^https?://' },
    auth: {
      type: 'object',
      required: ['kind'],
      properties: { kind: { enum: ['api_key', 'oauth'] } },
    },
    metrics: {
      type: 'object',
      minProperties: 1,
      additionalProperties: metricSpecSchema,
    },
    capabilities: { type: 'object', additionalProperties: { type: 'boolean' } },
  },
} as const;

export const dataSourceDescriptorSchema = {
  $id: 'usage-monitor:datasource-descriptor',
  type: 'object',
  required: ['apiVersion', 'id', 'name', 'description', 'connection'],
  properties: {
    apiVersion: { const: 1 },
    kind: { const: 'datasource' },
    id: { type: 'string', pattern: PLUGIN_ID_PATTERN, maxLength: 60 },
    name: { type: 'string', minLength: 1, maxLength: 80 },
    description: { type: 'string', minLength: 1, maxLength: 1000 },
    connection: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
    settings: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
  },
} as const;

/** Structural checks JSON Schema cannot express; returns problems as `field: message`. */
export function checkProviderSemantics(plugin: {
  metrics?: Record<string, { headline?: boolean; reset_metric?: string | null; capacity_metric?: string | null; unit?: string }>;
  fetchUsage?: unknown;
  testCredentials?: unknown;
  auth?: { kind?: string; device?: unknown; browser?: unknown };
  metricsFor?: unknown;
  capabilities?: Record<string, boolean | undefined>;
}): string[] {
  const problems: string[] = [];
  if (typeof plugin.fetchUsage !== 'function') problems.push('fetchUsage: must be a function');
  if (plugin.testCredentials !== undefined && typeof plugin.testCredentials !== 'function') {
    problems.push('testCredentials: must be a function when present');
  }
  if (plugin.capabilities?.dynamic_metrics === true && typeof plugin.metricsFor !== 'function') {
    problems.push('metricsFor: must be a function when capabilities.dynamic_metrics is set');
  }
  if (plugin.metricsFor !== undefined && plugin.capabilities?.dynamic_metrics !== true) {
    problems.push('capabilities.dynamic_metrics: must be true when the plugin implements metricsFor');
  }
  const metrics = plugin.metrics ?? {};
  const labels = Object.keys(metrics);
  const headlines = labels.filter((l) => metrics[l]?.headline);
  if (headlines.length > 1) problems.push(`metrics: more than one headline metric (${headlines.join(', ')})`);
  for (const label of labels) {
    const spec = metrics[label]!;
    for (const ref of ['reset_metric', 'capacity_metric'] as const) {
      const target = spec[ref];
      if (target != null && !labels.includes(target)) {
        problems.push(`metrics.${label}.${ref}: refers to undeclared metric "${target}"`);
      }
    }
    if (spec.reset_metric != null && metrics[spec.reset_metric]?.unit !== 'datetime') {
      problems.push(`metrics.${label}.reset_metric: "${spec.reset_metric}" must have unit "datetime"`);
    }
  }
  if (plugin.auth?.kind === 'oauth' && !plugin.auth.device && !plugin.auth.browser) {
    problems.push('auth: an oauth provider must declare a device or a browser flow');
  }
  return problems;
}
