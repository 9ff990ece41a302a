import type { Logger } from 'pino';
import type { Clock } from '@usage-monitor/core';
import type { Settings } from '../config/settings.js';
import type { PollingStore } from '../persistence/polling-store.js';
import type { PollService } from './poll.js';

const MIN_SLEEP_MS = 200;
const MAX_SLEEP_MS = 30_000;

/**
 * Background polling: sleeps until the earliest connection is due (bounded, so clock moves and new
 * connections are noticed), then polls everything that is due as one poll run.
 */
export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  private stopped = true;

  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly store: PollingStore,
    private readonly poll: PollService,
  ) {}

  start(): void {
    if (!this.settings.autoPollEnabled || !this.stopped) return;
    this.stopped = false;
    this.schedule(MIN_SLEEP_MS);
  }

  /** Connections changed: look at the schedule again soon instead of at the end of a long sleep. */
  nudge(): void {
    if (this.stopped || this.current || !this.timer) return;
    clearTimeout(this.timer);
    this.schedule(MIN_SLEEP_MS);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.tick().finally(() => (this.current = null));
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      await this.poll.pollDue();
    } catch (err) {
      this.logger.error({ err }, 'scheduled poll failed');
    }
    let sleep = MAX_SLEEP_MS;
    try {
      const next = await this.store.nextDueAt(this.poll.loadedProviders());
      if (next) sleep = next.getTime() - this.clock.now().getTime();
    } catch (err) {
      this.logger.error({ err }, 'could not read the polling schedule');
    }
    this.schedule(Math.min(MAX_SLEEP_MS, Math.max(MIN_SLEEP_MS, sleep)));
  }

  /** When the next background poll will happen (null when auto polling is off). */
  async nextPollAt(): Promise<Date | null> {
    if (!this.settings.autoPollEnabled) return null;
    const next = await this.store.nextDueAt(this.poll.loadedProviders());
    if (!next) return null;
    const now = this.clock.now();
    return next < now ? now : next;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }
}
