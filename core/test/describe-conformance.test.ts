import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const child = fileURLToPath(new URL('./support/conformance-child.ts', import.meta.url));

function runChild(broken: boolean) {
  // The parent runner's context variable would make the child skip running its tests.
  const env: NodeJS.ProcessEnv = { ...process.env, KIT_BROKEN: broken ? '1' : '0' };
  delete env.NODE_TEST_CONTEXT;
  const res = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', '--test', '--test-reporter=tap', child], {
    encoding: 'utf8',
    env,
    timeout: 60_000,
  });
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

test('describeConformance registers one test per case and per check, all passing for a correct plugin', () => {
  const { status, out } = runChild(false);
  assert.equal(status, 0, out);
  for (const name of ['descriptor', 'testcases folder', 'case healthy', 'case unauthorized', 'case unlimited', 'auth_401', 'secret_leak', 'classified_errors']) {
    assert.match(out, new RegExp(`^\\s*ok \\d+ - ${name}$`, 'm'), name);
  }
  assert.match(out, /ok \d+ - malformed_json # SKIP checked elsewhere/);
});

test('describeConformance fails the tests a broken plugin breaks, with the kit messages', () => {
  const { status, out } = runChild(true);
  assert.notEqual(status, 0, out);
  assert.match(out, /not ok \d+ - case healthy/);
  assert.match(out, /not ok \d+ - secret_leak/);
  assert.match(out, /\[secret_leak\] healthy: result\.summary contains the credential value acme…\(30 chars\)/);
  assert.match(out, /^\s*ok \d+ - auth_401$/m);
  assert.match(out, /^\s*ok \d+ - descriptor$/m);
});
