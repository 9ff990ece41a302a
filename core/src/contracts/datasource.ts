import type { PluginContext } from './context.js';
import type { JsonSchema } from './provider.js';

export type CostType = 'estimated' | 'actual' | 'unavailable';

/** One observed, per-request (or per-interval) usage record from an agent or gateway. */
export interface UsageRecord {
  event_id?: string | null;
  timestamp: string;
  provider: string;
  model?: string | null;
  profile?: string | null;
  session_id?: string | null;
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_tokens?: number | null;
  cache_write_tokens?: number | null;
  reasoning_tokens?: number | null;
  requests?: number | null;
  cost?: number | null;
  cost_type?: CostType | null;
}

export interface DataSourcePage {
  records: UsageRecord[];
  /** Persisted after the page is committed; handed back on the next call. */
  cursor: string | null;
  done: boolean;
}

export interface DataSourceContext<Settings = Record<string, unknown>> extends PluginContext<{ token?: string | null }, Settings> {}

export interface DataSourcePlugin<Settings = Record<string, unknown>> {
  apiVersion: 1;
  kind?: 'datasource';
  id: string;
  name: string;
  description: string;
  /** JSON Schema of the connection: base URL and secret token. */
  connection: JsonSchema;
  settings?: JsonSchema;
  fetch(ctx: DataSourceContext<Settings>, cursor: string | null): Promise<DataSourcePage>;
  test?(ctx: DataSourceContext<Settings>): Promise<{ ok: boolean; detail: string; sample: UsageRecord[] }>;
}

export function defineDataSource<Settings = Record<string, unknown>>(
  plugin: Omit<DataSourcePlugin<Settings>, 'kind'>,
): DataSourcePlugin<Settings> {
  return { kind: 'datasource', ...plugin };
}
