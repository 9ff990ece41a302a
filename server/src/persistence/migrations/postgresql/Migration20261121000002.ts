import { Migration } from '@mikro-orm/migrations';

/**
 * Polling: snapshots (every poll result), observations (normalized readings for analytics),
 * per-connection polling state (health counters, latest and last-good pointers, schedule, lease)
 * and poll runs.
 */
export class Migration20261121000002 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'create table "usage_snapshot" ("id" serial primary key, "connection_id" int not null, "provider" varchar(60) not null, "status" varchar(20) not null, "summary" text not null, "metrics" jsonb not null, "raw" jsonb not null, "error_code" varchar(40) null, "error_message" text null, "checked_at" timestamptz not null, "duration_ms" int null);',
    );
    this.addSql('create index "usage_snapshot_connection_checked_index" on "usage_snapshot" ("connection_id", "checked_at");');
    this.addSql('create index "usage_snapshot_checked_index" on "usage_snapshot" ("checked_at");');
    this.addSql(
      'create table "usage_observation" ("id" bigserial primary key, "connection_id" int null, "data_source_id" int null, "provider" varchar(60) not null, "metric" varchar(120) not null, "value" double precision not null, "unit" varchar(40) not null, "kind" varchar(10) not null, "source" varchar(12) not null, "observed_at" timestamptz not null, "window_start" timestamptz null, "window_end" timestamptz null, "reset_at" timestamptz null, "model" varchar(200) null, "profile" varchar(200) null, "session_id" varchar(200) null, "cost_type" varchar(20) null, "source_event_id" varchar(200) null, "native_key" varchar(600) null);',
    );
    this.addSql('create index "usage_observation_connection_metric_observed_index" on "usage_observation" ("connection_id", "metric", "observed_at");');
    this.addSql('create index "usage_observation_observed_index" on "usage_observation" ("observed_at");');
    this.addSql('create unique index "usage_observation_native_unique" on "usage_observation" ("connection_id", "native_key");');
    this.addSql('create unique index "usage_observation_source_event_unique" on "usage_observation" ("data_source_id", "source_event_id");');
    this.addSql(
      'create table "connection_state" ("connection_id" int not null primary key, "last_attempt_at" timestamptz null, "last_success_at" timestamptz null, "last_failure_at" timestamptz null, "consecutive_failures" int not null default 0, "latest_snapshot_id" int null, "last_good_snapshot_id" int null, "next_poll_at" timestamptz null, "backoff_until" timestamptz null, "lease_owner" varchar(100) null, "lease_until" timestamptz null);',
    );
    this.addSql('create index "connection_state_next_poll_index" on "connection_state" ("next_poll_at");');
    this.addSql(
      'create table "poll_run" ("id" serial primary key, "trigger" varchar(20) not null, "started_at" timestamptz not null, "finished_at" timestamptz null, "polled" int not null default 0, "succeeded" int not null default 0, "failed" int not null default 0);',
    );
    this.addSql('create index "poll_run_started_index" on "poll_run" ("started_at");');
  }
}
