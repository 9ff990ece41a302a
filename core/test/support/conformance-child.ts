/**
 * Run as a child by describe-conformance.test.ts: registers describeConformance for the acme
 * plugin, correct or (KIT_BROKEN=1) leaking its key into the summary.
 */
import { after } from 'node:test';
import { describeConformance } from '../../src/testing/index.js';
import { acme, acmeCases, goodFetch, removeCases, writeCases } from './acme.js';

const dir = writeCases(acmeCases());
after(() => removeCases(dir));

const plugin =
  process.env.KIT_BROKEN === '1'
    ? acme({
        async fetchUsage(ctx) {
          const u = await goodFetch(ctx);
          return { ...u, summary: `${u.summary} ${ctx.credentials.api_key}` };
        },
      })
    : acme();

describeConformance(plugin, { dir, skip: { malformed_json: 'checked elsewhere' } });
