import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTestCases, startFixtureServer, type FixtureServer } from '@usage-monitor/core/testing';
import { testDatabases } from './support/databases.js';
import { api, createToken, setupAdmin, startTestServer, type TestServer } from './support/server.js';

/**
 * examples/homepage: the gethomepage.dev `customapi` widget configurations. Every field they map
 * must exist in a real GET /api/v1/homepage response, and they may only use options the widget has.
 * No YAML dependency: the files use a small subset (maps, lists of maps, scalars), read below.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXAMPLES = path.join(ROOT, 'examples', 'homepage');
const read = (name: string) => fs.readFileSync(path.join(EXAMPLES, name), 'utf8');

/** The customapi widget's options and mapping options (gethomepage.dev docs, widgets/services/customapi). */
const WIDGET_OPTIONS = new Set(['type', 'url', 'refreshInterval', 'username', 'password', 'method', 'headers', 'requestBody', 'display', 'mappings']);
const BLOCK_MAPPING_OPTIONS = new Set(['field', 'label', 'format', 'remap', 'scale', 'prefix', 'suffix', 'additionalField', 'locale', 'dateStyle', 'timeStyle', 'style', 'numeric']);
const DYNAMIC_LIST_OPTIONS = new Set(['items', 'name', 'label', 'limit', 'target', 'format', 'scale', 'prefix', 'suffix']);
const FORMATS = new Set(['text', 'number', 'float', 'percent', 'duration', 'bytes', 'bitrate', 'date', 'relativeDate', 'size']);

interface YamlLine {
  indent: number;
  /** Starts a list item (`- key: value`). */
  item: boolean;
  key: string;
  value: string;
}

/** Non-empty, non-comment `key: value` lines; `- ` list markers count as indentation. */
function yamlLines(text: string): YamlLine[] {
  const out: YamlLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '');
    if (/^\s*(#|$)/.test(line)) continue;
    const m = /^(\s*)(- )?([^:]+):\s*(.*)$/.exec(line);
    assert.ok(m, `not a key: value line: ${raw}`);
    out.push({ indent: m[1]!.length + (m[2] ? 2 : 0), item: Boolean(m[2]), key: m[3]!.trim(), value: m[4]!.trim() });
  }
  return out;
}

/** The lines nested under `lines[at]`. */
function childrenOf(lines: YamlLine[], at: number): YamlLine[] {
  const out: YamlLine[] = [];
  for (let i = at + 1; i < lines.length && lines[i]!.indent > lines[at]!.indent; i++) out.push(lines[i]!);
  return out;
}

interface Widget {
  options: Record<string, string>;
  headers: Record<string, string>;
  /** dynamic-list: the mappings map. */
  map: Record<string, string>;
  /** block/list: one entry per mapping, `field` as a path (`field: { metrics: key }` is ['metrics', 'key']). */
  list: Array<{ path: string[]; opts: Record<string, string> }>;
}

function widgets(text: string): Widget[] {
  const lines = yamlLines(text);
  const found: Widget[] = [];
  lines.forEach((l, i) => {
    if (l.key !== 'widget') return;
    const body = childrenOf(lines, i);
    const top = body.filter((b) => b.indent === body[0]!.indent);
    const w: Widget = { options: {}, headers: {}, map: {}, list: [] };
    for (const t of top) w.options[t.key] = t.value;
    const at = (key: string) => lines.indexOf(top.find((t) => t.key === key)!);
    if ('headers' in w.options) for (const h of childrenOf(lines, at('headers'))) w.headers[h.key] = h.value;
    const mappings = childrenOf(lines, at('mappings'));
    if (mappings[0]?.item) {
      let current: Widget['list'][number] | null = null;
      for (let j = 0; j < mappings.length; j++) {
        const m = mappings[j]!;
        if (m.item) w.list.push((current = { path: [], opts: {} }));
        if (m.indent !== mappings[0]!.indent) continue;
        current!.opts[m.key] = m.value;
        if (m.key === 'field') {
          const nested = childrenOf(mappings, j);
          current!.path = m.value ? [m.value] : [...nested.map((n) => n.key), nested.at(-1)!.value];
        }
      }
    } else {
      for (const m of mappings) w.map[m.key] = m.value;
    }
    found.push(w);
  });
  return found;
}

/** How the customapi widget reads a mapped field: one key per level. */
function valueAt(data: unknown, keys: string[]): unknown {
  let v = data;
  for (const k of keys) {
    if (typeof v !== 'object' || v === null || !(k in v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** GET with a Host header of our choosing (fetch() will not send one), as Homepage's server would. */
function getWithHost(url: string, host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers: { host } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const dynamicList = widgets(read('services.dynamic-list.yaml'));
const block = widgets(read('services.block.yaml'));

describe('examples/homepage: gethomepage.dev customapi widgets', () => {
  test('the files hold customapi widgets with the options the widget has', () => {
    assert.equal(dynamicList.length, 1);
    assert.ok(block.length >= 1);
    for (const w of [...dynamicList, ...block]) {
      assert.equal(w.options.type, 'customapi');
      for (const key of Object.keys(w.options)) assert.ok(WIDGET_OPTIONS.has(key), `customapi has no option "${key}"`);
      assert.equal(new URL(w.options.url!).pathname, '/api/v1/homepage');
    }
    const [list] = dynamicList;
    assert.equal(list!.options.display, 'dynamic-list');
    assert.deepEqual({ items: list!.map.items, name: list!.map.name, label: list!.map.label }, { items: 'list', name: 'label', label: 'value' });
    for (const key of Object.keys(list!.map)) assert.ok(DYNAMIC_LIST_OPTIONS.has(key), `dynamic-list mappings have no option "${key}"`);
    for (const w of block) {
      assert.ok(w.options.display === undefined || w.options.display === 'block');
      assert.ok(w.list.length >= 1 && w.list.length <= 4, 'block mode shows at most four mappings');
      for (const m of w.list) {
        for (const key of Object.keys(m.opts)) assert.ok(BLOCK_MAPPING_OPTIONS.has(key), `mappings have no option "${key}"`);
        if (m.opts.format !== undefined) assert.ok(FORMATS.has(m.opts.format), `unknown format ${m.opts.format}`);
        assert.ok(m.opts.label, 'every mapping has a label');
      }
    }
    const fields = block.flatMap((w) => w.list.map((m) => m.path.join('.')));
    for (const f of ['configured_providers', 'healthy_providers', 'degraded_providers', 'latest_check', 'metrics.openrouter_work_usage_this_month']) {
      assert.ok(fields.includes(f), `the block example maps ${f}`);
    }
    const latest = block.flatMap((w) => w.list).find((m) => m.path.join('.') === 'latest_check');
    assert.equal(latest?.opts.format, 'relativeDate');
  });

  test('both access options are shown: a usage:read Bearer token, or HOMEPAGE_ALLOWED_HOSTS without one', () => {
    for (const [name, ws] of [['services.dynamic-list.yaml', dynamicList], ['services.block.yaml', block]] as const) {
      const text = read(name);
      for (const w of ws) assert.match(w.headers.Authorization ?? '', /^Bearer udt_\S+$/, `${name}: the token option`);
      assert.match(text, /usage:read/, `${name}: names the scope`);
      assert.match(text, /HOMEPAGE_ALLOWED_HOSTS=\S+/, `${name}: the token-free option`);
      assert.match(text, /Host header/, `${name}: says what the host rule trusts`);
    }
    const readme = read('README.md');
    for (const needle of ['services.dynamic-list.yaml', 'services.block.yaml', 'HOMEPAGE_ALLOWED_HOSTS', 'usage:read', 'Host']) {
      assert.ok(readme.includes(needle), `README.md mentions ${needle}`);
    }
  });

  const [db] = testDatabases();
  describe(`against a running server (${db!.name})`, () => {
    let server: TestServer;
    let fixture: FixtureServer;
    let admin: string;
    const exampleHost = new URL(dynamicList[0]!.options.url!).hostname;

    before(async () => {
      server = await startTestServer(db!, {
        env: { PLUGINS: '@usage-monitor/provider-openrouter', HOMEPAGE_ALLOWED_HOSTS: exampleHost, WORKER_THREADS: '1' },
      });
      admin = await setupAdmin(server);
      // A real OpenRouter connection labelled "Work", polled from a recorded upstream response.
      const { cases } = loadTestCases(path.join(ROOT, 'plugins', 'provider-openrouter', 'testcases'));
      const tc = cases.find((c) => c.name === 'healthy-limited-key')!;
      fixture = await startFixtureServer(tc.responses, { basePath: tc.basePath });
      const created = await api(server, 'POST', '/configs', {
        token: admin,
        body: { provider: 'openrouter', label: 'Work', credentials: tc.credentials, base_url: fixture.url + tc.basePath },
      });
      assert.equal(created.status, 201, created.text);
      const polled = await api(server, 'POST', `/configs/${created.body.id}/poll`, { token: admin });
      assert.equal(polled.body.status, 'healthy', polled.text);
    });
    after(async () => {
      await fixture?.close();
      await server?.close();
    });

    test('the example host reads /homepage without a token, and a usage:read token reads it anywhere', async () => {
      const open = await getWithHost(`${server.url}/api/v1/homepage`, exampleHost);
      assert.equal(open.status, 200, open.text);
      assert.equal((await getWithHost(`${server.url}/api/v1/homepage`, 'elsewhere.example')).status, 401);
      const token = await createToken(server, admin, ['usage:read']);
      assert.match(token, /^udt_/);
      const res = await api(server, 'GET', '/homepage', { token });
      assert.equal(res.status, 200);
    });

    test('every field the examples map exists in the response', async () => {
      const home = (await api(server, 'GET', '/homepage', { token: admin })).body;
      const { items, name, label } = dynamicList[0]!.map;
      const rows = valueAt(home, [items!]);
      assert.ok(Array.isArray(rows) && rows.length > 0, `"${items}" is a non-empty array`);
      for (const row of rows) {
        assert.equal(typeof row[name!], 'string', `each row has ${name}`);
        assert.equal(typeof row[label!], 'string', `each row has ${label}`);
      }
      assert.deepEqual([rows[0][name!], rows[0][label!]], ['OpenRouter (Work)', '$38.42 left']);
      for (const m of block.flatMap((w) => w.list)) {
        const v = valueAt(home, m.path);
        assert.ok(v !== undefined && v !== null, `${m.path.join('.')} is in the response (got ${JSON.stringify(v)})`);
        if (m.opts.format === 'number' || m.opts.format === 'float') assert.equal(typeof v, 'number', m.path.join('.'));
        if (m.opts.format === 'relativeDate') assert.ok(Date.parse(String(v)) > 0, m.path.join('.'));
      }
    });
  });
});
