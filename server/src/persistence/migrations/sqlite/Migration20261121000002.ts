import { Migration } from '@mikro-orm/migrations';

/**
 * Polling: snapshots (every poll result), observations (normalized readings for analytics),
 * per-connection polling state (health counters, latest and last-good pointers, schedule, lease)
 * and poll runs. Timestamps are epoch milliseconds, as MikroORM stores SQLite datetimes.
 */
export class Migration20261121000002 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'create table `usage_snapshot` (`id` integer not null primary key autoincrement, `connection_id` integer not null, `provider` text not null, `status` text not null, `summary` text not null, `metrics` json not null, `raw` json not null, `error_code` text null, `error_message` text null, `checked_at` datetime not null, `duration_ms` integer null);',
    );
    this.addSql('create index `usage_snapshot_connection_checked_index` on `usage_snapshot` (`connection_id`, `checked_at`);');
    this.addSql('create index `usage_snapshot_checked_index` on `usage_snapshot` (`checked_at`);');
    this.addSql(
      'create table `usage_observation` (`id` integer not null primary key autoincrement, `connection_id` integer null, `data_source_id` integer null, `provider` text not null, `metric` text not null, `value` real not null, `unit` text not null, `kind` text not null, `source` text not null, `observed_at` datetime not null, `window_start` datetime null, `window_end` datetime null, `reset_at` datetime null, `model` text null, `profile` text null, `session_id` text null, `cost_type` text null, `source_event_id` text null, `native_key` text null);',
    );
    this.addSql('create index `usage_observation_connection_metric_observed_index` on `usage_observation` (`connection_id`, `metric`, `observed_at`);');
    this.addSql('create index `usage_observation_observed_index` on `usage_observation` (`observed_at`);');
    this.addSql('create unique index `usage_observation_native_unique` on `usage_observation` (`connection_id`, `native_key`);');
    this.addSql('create unique index `usage_observation_source_event_unique` on `usage_observation` (`data_source_id`, `source_event_id`);');
    this.addSql(
      'create table `connection_state` (`connection_id` integer not null primary key, `last_attempt_at` datetime null, `last_success_at` datetime null, `last_failure_at` datetime null, `consecutive_failures` integer not null default 0, `latest_snapshot_id` integer null, `last_good_snapshot_id` integer null, `next_poll_at` datetime null, `backoff_until` datetime null, `lease_owner` text null, `lease_until` datetime null);',
    );
    this.addSql('create index `connection_state_next_poll_index` on `connection_state` (`next_poll_at`);');
    this.addSql(
      'create table `poll_run` (`id` integer not null primary key autoincrement, `trigger` text not null, `started_at` datetime not null, `finished_at` datetime null, `polled` integer not null default 0, `succeeded` integer not null default 0, `failed` integer not null default 0);',
    );
    this.addSql('create index `poll_run_started_index` on `poll_run` (`started_at`);');
  }
}
