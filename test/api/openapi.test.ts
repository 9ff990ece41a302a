import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { testDatabases } from '../support/databases.js';
import { api, startTestServer, type TestServer } from '../support/server.js';

describe('OpenAPI document and API reference', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(testDatabases()[0]!);
  });
  after(async () => server.close());

  test('the served document is valid OpenAPI 3.1', async () => {
    const res = await api(server, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(res.body);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2)?.slice(0, 2000));
  });

  test('every mounted route is documented and every documented operation is mounted', async () => {
    const doc = (await api(server, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const documented = new Set(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)));
    const mounted = new Set<string>();
    // Ask the real router: every layer Koa dispatches to, converted back to OpenAPI path syntax.
    for (const layer of server.running.bundle.router.stack) {
      const path = String(layer.path).replace(/^\/api\/v1/, '').replace(/:([A-Za-z_]+)/g, '{$1}');
      for (const m of layer.methods) if (m !== 'HEAD') mounted.add(`${m} ${path}`);
    }
    assert.deepEqual([...documented].sort(), [...mounted].sort());
    // And each documented operation really answers (not the 404 of an unknown route).
    for (const op of documented) {
      const [method, path] = op.split(' ') as [string, string];
      const res = await api(server, method, path.replace(/\{[^}]+\}/g, '1'), { body: method === 'GET' || method === 'DELETE' ? undefined : {} });
      const unknownRoute = res.status === 404 && /No route/.test(String(res.body?.detail));
      assert.ok(!unknownRoute, `${op} is documented but not mounted`);
    }
  });

  test('provider credential and settings schemas are published as components', async () => {
    const doc = (await api(server, 'GET', '/openapi.json')).body;
    assert.equal(doc.components.schemas.OpenrouterCredentials.properties.api_key.writeOnly, true);
    assert.ok(doc.components.schemas.OpenrouterSettings);
    assert.ok(doc.components.securitySchemes.bearer);
    const create = doc.paths['/configs'].post;
    assert.ok(create.requestBody.content['application/json'].schema.properties.provider);
    assert.ok(create.responses['400'].content['application/problem+json']);
  });

  test('a human-readable reference page is served from local assets with a strict CSP', async () => {
    const page = await fetch(`${server.url}/api/v1/docs`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /swagger-ui-bundle\.js/);
    assert.doesNotMatch(html, /https?:\/\/(?!usage-monitor)/, 'no CDN links');
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const bundle = await fetch(`${server.url}/api/v1/docs/swagger-ui-bundle.js`);
    assert.equal(bundle.status, 200);
    assert.ok((await bundle.arrayBuffer()).byteLength > 100_000);
    assert.equal((await fetch(`${server.url}/api/v1/docs/../../package.json`)).status, 404);
  });
});
