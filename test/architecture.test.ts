import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The dependency direction of DESIGN.md section 3, checked on the source itself. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function sources(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const name of fs.readdirSync(d)) {
      if (name === 'node_modules' || name === 'dist' || name === 'testcases') continue;
      const full = path.join(d, name);
      if (fs.statSync(full).isDirectory()) walk(full);
      else if (/\.(ts|mts|js|mjs)$/.test(name)) out.push(full);
    }
  };
  walk(dir);
  return out;
}

function imports(file: string): string[] {
  // Comments may show imports as examples; only code counts.
  const text = fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g)) {
    found.push((m[1] ?? m[2] ?? m[3])!);
  }
  return found;
}

function escapes(file: string, spec: string, boundary: string): boolean {
  return spec.startsWith('.') && !path.resolve(path.dirname(file), spec).startsWith(boundary + path.sep);
}

const SERVER_RUNTIME = /^(koa|koa-.*|@koa\/.*|@mikro-orm\/.*|tsyringe|piscina|pino.*)$/;

test('core imports nothing of ours and no server runtime', () => {
  const coreDir = path.join(root, 'core');
  for (const file of sources(path.join(coreDir, 'src'))) {
    for (const spec of imports(file)) {
      assert.ok(!spec.startsWith('@usage-monitor/'), `${path.relative(root, file)} imports ${spec}`);
      assert.ok(!SERVER_RUNTIME.test(spec), `${path.relative(root, file)} imports ${spec}`);
      assert.ok(!escapes(file, spec, coreDir), `${path.relative(root, file)} reaches outside core: ${spec}`);
    }
  }
});

test('plugins import only @usage-monitor/core and never server runtime packages', () => {
  const dirs = [
    ...fs.readdirSync(path.join(root, 'plugins')).map((d) => path.join(root, 'plugins', d)),
    ...(fs.existsSync(path.join(root, 'examples')) ? fs.readdirSync(path.join(root, 'examples')).filter((d) => d.startsWith('provider-')).map((d) => path.join(root, 'examples', d)) : []),
  ];
  assert.ok(dirs.length >= 1);
  for (const dir of dirs) {
    for (const file of [...sources(path.join(dir, 'src')), ...sources(path.join(dir, 'test'))]) {
      for (const spec of imports(file)) {
        if (spec.startsWith('@usage-monitor/')) {
          assert.ok(/^@usage-monitor\/core(\/testing)?$/.test(spec), `${path.relative(root, file)} imports ${spec}`);
        }
        assert.ok(!SERVER_RUNTIME.test(spec), `${path.relative(root, file)} imports ${spec}`);
        assert.ok(!escapes(file, spec, dir), `${path.relative(root, file)} reaches outside its plugin folder: ${spec}`);
      }
    }
  }
});

test('the server never imports plugin source; it loads plugins by package name', () => {
  const serverDir = path.join(root, 'server');
  for (const file of sources(path.join(serverDir, 'src'))) {
    for (const spec of imports(file)) {
      assert.ok(!/^@usage-monitor\/(provider|datasource)-/.test(spec), `${path.relative(root, file)} imports ${spec}`);
      assert.ok(!escapes(file, spec, serverDir), `${path.relative(root, file)} reaches outside the server: ${spec}`);
    }
  }
});
