import { describe, test } from 'node:test';
import type { ProviderPlugin } from '../contracts/provider.js';
import { checkPlugin, formatFailures, GENERIC_CHECKS, type ConformanceOptions, type ConformanceReport } from './check.js';
import { listCaseNames } from './testcases.js';

/**
 * Registers node:test tests for a provider plugin: one for the descriptor, one for the testcases
 * folder, one per case and one per generic check. The suite runs once (`checkPlugin`); each test
 * fails with the report's messages that concern it.
 *
 * ```ts
 * import { describeConformance } from '@usage-monitor/core/testing';
 * import plugin from '../src/index.js';
 * describeConformance(plugin, { dir: new URL('../testcases/', import.meta.url) });
 * ```
 */
export function describeConformance<C, S>(plugin: ProviderPlugin<C, S>, options: ConformanceOptions): void {
  const caseNames = listCaseNames(options.dir);
  let pending: Promise<ConformanceReport> | undefined;
  const report = () => (pending ??= checkPlugin(plugin, options));
  const skip = options.skip ?? {};

  const expectNone = async (select: (f: ConformanceReport['failures'][number]) => boolean) => {
    const failures = (await report()).failures.filter(select);
    if (failures.length > 0) throw new Error(`\n${formatFailures(failures)}`);
  };

  const id = typeof (plugin as { id?: unknown } | null)?.id === 'string' ? plugin.id : 'plugin';
  describe(`conformance: ${id}`, () => {
    test('descriptor', () => expectNone((f) => f.check === 'descriptor'));
    // Also collects anything no other test claims, so that no failure goes unreported.
    const claimed = (f: ConformanceReport['failures'][number]) =>
      f.check === 'descriptor' || caseNames.includes(f.case) || (GENERIC_CHECKS as readonly string[]).includes(f.check);
    test('testcases folder', () => expectNone((f) => !claimed(f)));
    for (const name of caseNames) {
      test(`case ${name}`, () => expectNone((f) => f.case === name));
    }
    for (const check of GENERIC_CHECKS) {
      const reason = skip[check];
      if (reason !== undefined) test(check, { skip: reason }, () => {});
      else test(check, () => expectNone((f) => f.check === check));
    }
  });
}
