import type { Logger } from 'pino';
import type { Clock } from '@usage-monitor/core';
import type { Settings } from '../config/settings.js';
import type { PollingStore } from '../persistence/polling-store.js';

const BATCH = 5_000;
const EVERY_MS = 60 * 60_000;
const FIRST_RUN_DELAY_MS = 60_000;

/**
 * Deletes snapshots older than SNAPSHOT_RETENTION_DAYS (never a connection's latest or last-good)
 * and observations older than ANALYTICS_HOURLY_RETENTION_DAYS, in bounded batches so a large purge
 * never holds the database for long.
 */
export class RetentionService {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly store: PollingStore,
  ) {}

  start(): void {
    const loop = (delay: number) => {
      this.timer = setTimeout(() => {
        this.running = this.run()
          .catch((err: unknown) => this.logger.error({ err }, 'retention failed'))
          .finally(() => {
            this.running = null;
            if (this.timer) loop(EVERY_MS);
          });
      }, delay);
      this.timer.unref();
    };
    loop(FIRST_RUN_DELAY_MS);
  }

  async run(): Promise<{ snapshots: number; observations: number }> {
    const now = this.clock.now().getTime();
    const snapshotsBefore = new Date(now - this.settings.snapshotRetentionDays * 86_400_000);
    const observationsBefore = new Date(now - this.settings.analyticsHourlyRetentionDays * 86_400_000);
    let snapshots = 0;
    let observations = 0;
    for (let n = BATCH; n === BATCH; ) {
      n = await this.store.pruneSnapshots(snapshotsBefore, BATCH);
      snapshots += n;
      await new Promise((r) => setImmediate(r)); // let requests in between batches
    }
    for (let n = BATCH; n === BATCH; ) {
      n = await this.store.pruneObservations(observationsBefore, BATCH);
      observations += n;
      await new Promise((r) => setImmediate(r));
    }
    if (snapshots + observations > 0) this.logger.info({ snapshots, observations }, 'retention removed old history');
    return { snapshots, observations };
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
