import { Migration } from '@mikro-orm/migrations';

/** Foundation: admin credential and sessions, API tokens, connections, app settings. */
export class Migration20261121000001 extends Migration {
  override async up(): Promise<void> {
    this.addSql('create table "app_setting" ("key" varchar(100) not null, "value" text not null, constraint "app_setting_pkey" primary key ("key"));');
    this.addSql(
      'create table "admin_credential" ("id" int not null, "password_hash" text null, "setup_code_hash" varchar(64) null, "setup_code_expires_at" timestamptz null, "reset_code_hash" varchar(64) null, "reset_code_expires_at" timestamptz null, "updated_at" timestamptz not null, constraint "admin_credential_pkey" primary key ("id"));',
    );
    this.addSql(
      'create table "admin_session" ("id" serial primary key, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "last_used_at" timestamptz null);',
    );
    this.addSql('alter table "admin_session" add constraint "admin_session_token_hash_unique" unique ("token_hash");');
    this.addSql(
      'create table "api_token" ("id" serial primary key, "name" varchar(120) not null, "token_hash" varchar(64) not null, "token_prefix" varchar(20) not null, "scopes" jsonb not null, "created_at" timestamptz not null, "expires_at" timestamptz null, "revoked_at" timestamptz null, "last_used_at" timestamptz null);',
    );
    this.addSql('alter table "api_token" add constraint "api_token_token_hash_unique" unique ("token_hash");');
    this.addSql(
      'create table "connection" ("id" serial primary key, "provider" varchar(60) not null, "label" varchar(120) not null, "credentials" text not null, "base_url" varchar(2048) null, "settings" jsonb not null, "is_enabled" boolean not null, "is_visible" boolean not null, "display_order" int not null, "alert_thresholds" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null);',
    );
    this.addSql('create index "connection_display_order_index" on "connection" ("display_order");');
    this.addSql('alter table "connection" add constraint "connection_provider_label_unique" unique ("provider", "label");');
  }
}
