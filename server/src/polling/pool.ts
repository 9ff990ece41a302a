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

type Pool = Piscina<PollTask, PollTaskResult>;
type Balancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/**
 * The least busy worker, up to `max` tasks each. piscina's own balancer gives a task that carries
 * an abort signal an idle worker and that worker nothing else, which would leave one poll per
 * thread; here every task carries one (the hard timeout), and tasks share workers regardless.
 */
function sharedBalancer(max: number): Balancer {
  return (_task, workers) => {
    let best: (typeof workers)[number] | null = null;
    let bestUsage = max;
    for (const worker of workers) {
      // piscina reports a worker running exactly one abortable task as Infinity: that is one task.
      const usage = Number.isFinite(worker.currentUsage) ? worker.currentUsage : 1;
      if (usage === 0) return worker;
      if (usage < bestUsage) {
        best = worker;
        bestUsage = usage;
      }
    }
    return best;
  };
}

/** A counting semaphore: at most `size` holders; the others wait in order. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

/**
 * The piscina pools that run plugin fetches in worker threads. Fetches are I/O-bound, so each
 * thread of the shared pool runs several at once; POLL_CONCURRENCY bounds the total. A task that
 * does not settle by its hard timeout (a plugin spinning in a loop) is aborted, which terminates
 * its worker; every task that worker held fails with it. A task that fails that way (or with any
 * other worker failure: a plugin exiting its thread, an uncaught error) is run once more, alone,
 * in a second pool whose workers take one task at a time: the tasks that only shared a thread with
 * the culprit succeed there, so one bad plugin costs only its own poll, and only a repeat offender
 * is reported (as a timeout, or as a crash of its worker).
 */
export class PollPool {
  private shared: Pool | null = null;
  private isolated: Pool | null = null;
  private isolatedSlots: Slots | null = null;

  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
  ) {}

  private get threads(): number {
    return Math.max(1, Math.min(this.settings.workerThreads, this.settings.pollConcurrency));
  }

  private create(perWorker: number, balancer?: Balancer): Pool {
    const pool = new Piscina<PollTask, PollTaskResult>({
      filename: WORKER_FILE,
      minThreads: 0,
      maxThreads: this.threads,
      concurrentTasksPerWorker: perWorker,
      idleTimeout: 60_000,
      ...(balancer ? { loadBalancer: balancer } : {}),
      // Workers inherit the parent's --import/--conditions flags (tsx in development).
    });
    pool.on('error', (err: unknown) => this.logger.error({ err }, 'poll worker error'));
    return pool;
  }

  private sharedPool(): Pool {
    if (!this.shared) {
      const perWorker = Math.max(1, Math.ceil(this.settings.pollConcurrency / this.threads));
      this.shared = this.create(perWorker, sharedBalancer(perWorker));
    }
    return this.shared;
  }

  private isolatedPool(): Pool {
    this.isolated ??= this.create(1);
    return this.isolated;
  }

  async run(task: PollTask): Promise<PollTaskResult> {
    for (let attempt = 0; ; attempt++) {
      // A second attempt waits for a free isolated worker before its hard timeout starts to run.
      const release = attempt === 0 ? null : await (this.isolatedSlots ??= new Slots(this.threads)).acquire();
      const signal = AbortSignal.timeout(task.timeoutMs + HARD_TIMEOUT_GRACE_MS);
      const started = performance.now();
      try {
        return await (attempt === 0 ? this.sharedPool() : this.isolatedPool()).run(task, { signal });
      } catch (err) {
        const durationMs = Math.round(performance.now() - started);
        // The worker was unresponsive, was terminated for another task, or died: this plugin may be
        // the cause or may only have shared the thread. Alone, a second try tells them apart.
        if (attempt === 0) continue;
        if (signal.aborted) {
          return { ok: false, error: { code: 'timeout', message: 'The plugin did not finish in time and was stopped' }, durationMs, logs: [] };
        }
        const message = (err as Error)?.message ?? String(err);
        return { ok: false, error: { code: 'upstream_error', message: `The plugin crashed its worker: ${message.slice(0, 200)}` }, durationMs, logs: [] };
      } finally {
        release?.();
      }
    }
  }

  async close(): Promise<void> {
    const pools = [this.shared, this.isolated];
    this.shared = null;
    this.isolated = null;
    await Promise.all(pools.map((p) => p?.destroy()));
  }
}
