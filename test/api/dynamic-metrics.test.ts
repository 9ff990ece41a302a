import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer, type TestServer } from '../support/server.js';

/**
 * Dynamic metrics (core's `metricsFor` / `capabilities.dynamic_metrics`): a custom HTTP connection's
 * metrics are the ones its settings define, so thresholds and settings are checked against those.
 */

const metrics = [
  { label: 'Credits left', path: 'data.credits.remaining', unit: 'credits', type: 'remaining' },
  { label: 'Requests today', path: 'data.requests', unit: 'requests', type: 'counter' },
  { label: 'Resets at', path: 'data.reset', unit: 'datetime' },
];
const extra = (list: unknown[] = metrics) => ({ url: 'https://usage.example.test/api/usage', metrics: list });
const rule = (metric: string) => ({ metric, direction: 'decreasing', warning: 100, critical: 10 });

for (const db of testDatabases()) {
  describe(`dynamic metrics: custom HTTP connections (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    before(async () => {
      server = await startTestServer(db);
      admin = await setupAdmin(server);
    });
    after(async () => server.close());

    const create = (body: Record<string, unknown>) => api(server, 'POST', '/configs', { token: admin, body: { provider: 'custom-http', ...body } });
    const fieldOf = (res: { body: { errors?: Array<{ path: string }> } }) => res.body.errors?.map((e) => e.path);

    test('GET /providers publishes no placeholder metrics for a dynamic-metrics plugin', async () => {
      const res = await api(server, 'GET', '/providers');
      const custom = res.body.find((p: { id: string }) => p.id === 'custom-http');
      assert.equal(custom.capabilities.dynamic_metrics, true);
      assert.deepEqual(custom.metrics, []);
      assert.deepEqual(custom.alert_metrics, []);
      assert.deepEqual(custom.metric_specs, {});
      const openrouter = res.body.find((p: { id: string }) => p.id === 'openrouter');
      assert.ok(openrouter.metrics.length > 0, 'static plugins are unchanged');
    });

    let id: number;
    test('thresholds on the connection’s own labels are accepted', async () => {
      const res = await create({ label: 'Two metrics', extra: extra(), alert_thresholds: [rule('Credits left'), { metric: 'Requests today', direction: 'increasing', warning: 900 }] });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.alert_thresholds.map((r: { metric: string }) => r.metric), ['Credits left', 'Requests today']);
      id = res.body.id;
      const patched = await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { alert_thresholds: [rule('Credits left')] } });
      assert.equal(patched.status, 200, patched.text);
    });

    test('a threshold on a label the settings do not define is a 400', async () => {
      for (const metric of ['Value', 'Credits remaining', 'Resets at']) {
        const res = await create({ label: `Bad ${metric}`, extra: extra(), alert_thresholds: [rule(metric)] });
        assert.equal(res.status, 400, `${metric}: ${res.text}`);
        assert.deepEqual(fieldOf(res), ['/body/alert_thresholds/0/metric']);
        assert.match(res.body.errors[0].message, /Credits left, Requests today$/, 'the message lists the numeric labels');
      }
      const patched = await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { alert_thresholds: [rule('Nope')] } });
      assert.equal(patched.status, 400);
      assert.deepEqual(fieldOf(patched), ['/body/alert_thresholds/0/metric']);
    });

    test('duplicate labels and other inconsistent metric lists are a 400 on /body/extra', async () => {
      const dup = await create({ label: 'Dup', extra: extra([metrics[0], { ...metrics[1], label: 'Credits left' }]) });
      assert.equal(dup.status, 400, dup.text);
      assert.deepEqual(fieldOf(dup), ['/body/extra/metrics']);
      assert.match(dup.body.detail, /used twice/);

      const percent = await create({ label: 'Percent', extra: extra([{ label: 'Used', path: 'u', unit: 'requests', type: 'percent_used' }]) });
      assert.equal(percent.status, 400, percent.text);
      assert.deepEqual(fieldOf(percent), ['/body/extra/metrics']);

      const reset = await create({ label: 'Reset', extra: extra([{ label: 'Used', path: 'u', unit: 'requests', reset_metric: 'Used' }]) });
      assert.equal(reset.status, 400, reset.text);
      assert.deepEqual(fieldOf(reset), ['/body/extra/metrics']);

      const patched = await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { extra: extra([metrics[0], metrics[0]]) } });
      assert.equal(patched.status, 400, patched.text);
      assert.deepEqual(fieldOf(patched), ['/body/extra/metrics']);
      assert.equal((await api(server, 'GET', '/configs', { token: admin })).body.filter((c: { provider: string }) => c.provider === 'custom-http').length, 1);
    });

    test('new settings that drop a metric with a threshold are refused; with the threshold removed they pass', async () => {
      const only = extra([metrics[1]]);
      const refused = await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { extra: only } });
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(fieldOf(refused), ['/body/extra']);
      assert.match(refused.body.detail, /Credits left/);
      const ok = await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { extra: only, alert_thresholds: [{ metric: 'Requests today', direction: 'increasing', critical: 1000 }] } });
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(ok.body.extra.metrics.map((m: { label: string }) => m.label), ['Requests today']);
    });
  });
}
