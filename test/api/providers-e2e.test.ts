import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  credentialSecrets,
  loadTestCases,
  startFixtureServer,
  substituteBaseUrl,
  type FixtureServer,
  type TestCase,
} from '@usage-monitor/core/testing';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer, type TestServer } from '../support/server.js';

/**
 * End to end, every first-party provider through the real server: default plugin discovery, the
 * connection API, a poll in the worker pool, storage, /usage and /homepage. Each provider's first
 * healthy testcase (the same recorded upstream responses its conformance run uses) is served by a
 * fixture server on 127.0.0.1, and the poll must produce exactly the metrics the case expects.
 *
 * Several plugins read ctx.clock: openai and anthropic derive their report window (the query they
 * send) from the day of `now`, firecrawl picks the billing period containing `now`, codex and
 * claude-code compare the token expiry with `now` (an expired token means a refresh first). So each
 * poll runs with the test server's clock moved to the case's `now`. The worker takes the clock as
 * an offset from the real time at dispatch, so a plugin sees `now` plus the few milliseconds the
 * poll takes; no case puts a day boundary, period edge or token expiry that close to its `now`, so
 * the expected metrics still match exactly.
 */

const PLUGINS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'plugins');

const PROVIDERS = [
  'openai',
  'anthropic',
  'openrouter',
  'deepseek',
  'firecrawl',
  'codex',
  'claude-code',
  'github-copilot',
  'zai',
  'moonshot',
  'elevenlabs',
  'custom-http',
] as const;

const LABEL = 'E2E';

/** The first case (in the kit's order) whose expected.json says healthy. */
function firstHealthyCase(provider: string): TestCase {
  const { cases, problems } = loadTestCases(path.join(PLUGINS_DIR, `provider-${provider}`, 'testcases'));
  assert.deepEqual(problems, [], `${provider}: the testcases load without problems`);
  const found = cases.find((c) => c.expected?.status === 'healthy');
  assert.ok(found, `${provider} has a healthy testcase`);
  return found;
}

const CASES = new Map<string, TestCase>(PROVIDERS.map((p) => [p, firstHealthyCase(p)]));

/** The same key shape /homepage uses for its flat metrics. */
/** The flat key rule of /homepage: lower-case words joined by `_`, `%` spelled `pct`. */
const slug = (s: string) => s.toLowerCase().replace(/%/g, ' pct ').replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');

interface Polled {
  id: number;
  secrets: string[];
  metrics: Array<{ label: string; value: unknown }>;
}

for (const db of testDatabases()) {
  describe(`every first-party provider end to end (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    const fixtures: FixtureServer[] = [];
    const polled = new Map<string, Polled>();
    /** Every response body the tests received, for the final leak check. */
    const seen: string[] = [];
    let providers: Array<Record<string, any>> = [];

    before(async () => {
      server = await startTestServer(db, {
        env: {
          // No PLUGINS: the server discovers every installed first-party plugin.
          CUSTOM_HTTP_ALLOWED_HOSTS: '127.0.0.1',
          REQUEST_TIMEOUT_SECONDS: '5',
          WORKER_THREADS: '2',
        },
      });
      admin = await setupAdmin(server);
    });
    after(async () => {
      await Promise.all(fixtures.map((f) => f.close()));
      await server?.close();
    });

    test('GET /providers lists the twelve first-party providers with their credential and settings schemas', async () => {
      const res = await api(server, 'GET', '/providers');
      assert.equal(res.status, 200, res.text);
      providers = res.body;
      assert.deepEqual(providers.map((p) => p.id).sort(), [...PROVIDERS].sort());
      for (const id of PROVIDERS) {
        const p = providers.find((x) => x.id === id)!;
        const plugin = ((await import(`@usage-monitor/provider-${id}`)) as { default: { credentials: unknown; settings?: unknown } }).default;
        assert.equal(typeof p.name, 'string', id);
        assert.deepEqual(p.credentials_schema, JSON.parse(JSON.stringify(plugin.credentials)), `${id}: credentials_schema is the plugin's schema`);
        assert.deepEqual(
          p.settings_schema,
          plugin.settings === undefined ? { type: 'object', properties: {} } : JSON.parse(JSON.stringify(plugin.settings)),
          `${id}: settings_schema is the plugin's schema`,
        );
        assert.equal(p.credentials_schema.type, 'object', id);
        assert.equal(p.settings_schema.type, 'object', id);
      }
    });

    for (const provider of PROVIDERS) {
      const tc = CASES.get(provider)!;
      test(`${provider}: testcase "${tc.name}" polls healthy through the server with the expected metrics`, async () => {
        const fixture = await startFixtureServer(tc.responses, { basePath: tc.basePath });
        fixtures.push(fixture);
        const baseUrl = fixture.url + tc.basePath;
        const credentials = substituteBaseUrl(tc.credentials, baseUrl);
        const settings = substituteBaseUrl(tc.settings, baseUrl);
        const schema = providers.find((p) => p.id === provider)?.credentials_schema ?? {};
        const secrets = credentialSecrets({ credentials: schema }, credentials, baseUrl);
        assert.ok(secrets.length > 0, `${provider}: the case has a credential string to look for`);
        const noLeak = (where: string, text: string) => {
          seen.push(text);
          for (const s of secrets) assert.ok(!text.includes(s), `${provider}: ${where} contains a credential`);
        };

        const created = await api(server, 'POST', '/configs', {
          token: admin,
          body: { provider, label: LABEL, credentials, extra: settings, base_url: baseUrl },
        });
        assert.equal(created.status, 201, created.text);
        noLeak('POST /configs', created.text);
        const id = created.body.id as number;

        server.clock.offsetMs = Date.parse(tc.now) - Date.now();
        const res = await api(server, 'POST', `/configs/${id}/poll`, { token: admin });
        assert.equal(res.status, 200, res.text);
        noLeak('the poll response', res.text);
        assert.deepEqual(
          fixture.unmatched.map((u) => `${u.method} ${u.path}: ${u.reason}`),
          [],
          `${provider}: every upstream request matched a recorded response`,
        );
        assert.equal(res.body.status, tc.expected!.status, `${provider}: ${res.body.error_code ?? ''} ${res.body.error ?? ''}`);
        assert.deepEqual(res.body.metrics, tc.expected!.metrics);
        if (tc.expected!.summary !== undefined) assert.equal(res.body.summary, tc.expected!.summary);
        assert.deepEqual(
          fixture.unused().filter((e) => !e.optional).map((e) => e.name),
          [],
          `${provider}: every recorded response was requested`,
        );

        const usage = await api(server, 'GET', '/usage', { token: admin });
        assert.equal(usage.status, 200, usage.text);
        noLeak('GET /usage', usage.text);
        const row = usage.body.find((r: { config: { id: number } }) => r.config.id === id);
        assert.equal(row.health.status, 'healthy');
        assert.equal(row.latest.id, res.body.id);
        assert.deepEqual(row.latest.metrics, tc.expected!.metrics);

        const home = await api(server, 'GET', '/homepage', { token: admin });
        assert.equal(home.status, 200, home.text);
        noLeak('GET /homepage', home.text);
        const item = home.body.list.find((l: { config_id: number }) => l.config_id === id);
        assert.ok(item, `${provider}: /homepage lists the connection`);
        assert.equal(item.provider, provider);
        assert.equal(item.status, 'healthy');
        assert.equal(typeof item.value, 'string');
        assert.ok(item.value.length > 0 && item.value !== 'no data yet', `${provider}: a value is shown (${item.value})`);

        const history = await api(server, 'GET', `/configs/${id}/history`, { token: admin });
        assert.equal(history.status, 200, history.text);
        noLeak('the history', history.text);
        assert.equal(history.body.length, 1);

        noLeak('the server log', server.logs.text());
        polled.set(provider, { id, secrets, metrics: res.body.metrics });
      });
    }

    /** The /homepage flat keys of every polled metric, with the metrics that map to each. */
    const flatKeys = () => {
      const keys = new Map<string, Array<{ label: string; value: unknown }>>();
      for (const [provider, p] of polled) {
        for (const m of p.metrics) {
          const key = `${slug(provider)}_${slug(LABEL)}_${slug(m.label)}`;
          keys.set(key, [...(keys.get(key) ?? []), m]);
        }
      }
      return keys;
    };

    test('all twelve together: /homepage counts them healthy and flattens every metric; nothing leaks', async (t) => {
      if (polled.size !== PROVIDERS.length) return t.skip(`only ${polled.size} providers polled`);
      server.clock.offsetMs = 0;
      const home = await api(server, 'GET', '/homepage', { token: admin });
      assert.equal(home.status, 200, home.text);
      assert.equal(home.body.configured_providers, PROVIDERS.length);
      assert.equal(home.body.healthy_providers, PROVIDERS.length);
      assert.equal(home.body.degraded_providers, 0);
      assert.equal(home.body.summary, `${PROVIDERS.length} of ${PROVIDERS.length} healthy`);
      assert.ok(Date.parse(home.body.latest_check) > 0);
      for (const [key, values] of flatKeys()) {
        assert.ok(key in home.body.metrics, `/homepage has ${key}`);
        assert.equal(values.length, 1, `${key} is shared by ${values.map((v) => v.label).join(' | ')}`);
        assert.deepEqual(home.body.metrics[key], values[0]!.value, key);
      }
      const configs = await api(server, 'GET', '/configs', { token: admin });
      const all = [home.text, configs.text, ...seen, server.logs.text()].join('\n');
      for (const [provider, p] of polled) {
        for (const s of p.secrets) assert.ok(!all.includes(s), `a ${provider} credential leaked`);
      }
    });

    test('each metric of a connection has a /homepage flat key of its own', () => {
        const shared = [...flatKeys()].filter(([, values]) => values.length > 1).map(([key, values]) => `${key}: ${values.map((v) => v.label).join(' | ')}`);
        assert.deepEqual(shared, []);
    });
  });
}
