import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import type { PollTask, PollTaskResult } from './protocol.js';

const here = fileURLToPath(import.meta.url);
// tsx runs the TypeScript sources in development and tests (through a bootstrap that registers it
// in the worker thread); production runs the compiled JS.
const WORKER_FILE = path.join(path.dirname(here), here.endsWith('.ts') ? 'worker-dev.mjs' : 'worker.js');

/** Grace beyond the plugin's own HTTP timeout before a stuck worker is terminated. */
const HARD_TIMEOUT_GRACE_MS = 2_000;

/**
 * The piscina pool that runs plugin fetches in worker threads. Fetches are I/O-bound, so each
 * thread runs several at once; POLL_CONCURRENCY bounds the total. A task that does not settle by
 * its hard timeout (a plugin spinning in a loop) gets its worker terminated; tasks that shared
 * that worker are run once more, so one bad plugin costs only its own poll.
 */
export class PollPool {
  private pool: Piscina<PollTask, PollTaskResult> | null = null;

  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
  ) {}

  private get(): Piscina<PollTask, PollTaskResult> {
    if (!this.pool) {
      const threads = Math.max(1, Math.min(this.settings.workerThreads, this.settings.pollConcurrency));
      this.pool = new Piscina<PollTask, PollTaskResult>({
        filename: WORKER_FILE,
        minThreads: 0,
        maxThreads: threads,
        concurrentTasksPerWorker: Math.max(1, Math.ceil(this.settings.pollConcurrency / threads)),
        idleTimeout: 60_000,
        // Workers inherit the parent's --import/--conditions flags (tsx in development).
      });
      this.pool.on('error', (err: unknown) => this.logger.error({ err }, 'poll worker error'));
    }
    return this.pool;
  }

  async run(task: PollTask): Promise<PollTaskResult> {
    for (let attempt = 0; ; attempt++) {
      const signal = AbortSignal.timeout(task.timeoutMs + HARD_TIMEOUT_GRACE_MS);
      const started = performance.now();
      try {
        return await this.get().run(task, { signal });
      } catch (err) {
        const durationMs = Math.round(performance.now() - started);
        if (signal.aborted) {
          // The worker was unresponsive: either this plugin spun, or it shared a thread with one that
          // did. A second try tells them apart; only a repeat offender is reported as a timeout.
          if (attempt === 0) continue;
          return { ok: false, error: { code: 'timeout', message: 'The plugin did not finish in time and was stopped' }, durationMs, logs: [] };
        }
        const message = (err as Error)?.message ?? String(err);
        // The worker died under this task: another task's worker termination, or this plugin
        // exiting its thread. Try once more; a second death is this plugin's own failure.
        if (attempt === 0 && /terminat|exited|worker/i.test(message)) continue;
        return { ok: false, error: { code: 'upstream_error', message: `The plugin crashed its worker: ${message.slice(0, 200)}` }, durationMs, logs: [] };
      }
    }
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool) await pool.destroy();
  }
}
