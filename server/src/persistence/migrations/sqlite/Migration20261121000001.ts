import { Migration } from '@mikro-orm/migrations';

/** Foundation: admin credential and sessions, API tokens, connections, app settings. */
export class Migration20261121000001 extends Migration {
  override async up(): Promise<void> {
    this.addSql("create table `app_setting` (`key` text not null, `value` text not null, primary key (`key`));");
    this.addSql(
      'create table `admin_credential` (`id` integer not null, `password_hash` text null, `setup_code_hash` text null, `setup_code_expires_at` datetime null, `reset_code_hash` text null, `reset_code_expires_at` datetime null, `updated_at` datetime not null, primary key (`id`));',
    );
    this.addSql(
      'create table `admin_session` (`id` integer not null primary key autoincrement, `token_hash` text not null, `created_at` datetime not null, `expires_at` datetime not null, `revoked_at` datetime null, `last_used_at` datetime null);',
    );
    this.addSql('create unique index `admin_session_token_hash_unique` on `admin_session` (`token_hash`);');
    this.addSql(
      'create table `api_token` (`id` integer not null primary key autoincrement, `name` text not null, `token_hash` text not null, `token_prefix` text not null, `scopes` json not null, `created_at` datetime not null, `expires_at` datetime null, `revoked_at` datetime null, `last_used_at` datetime null);',
    );
    this.addSql('create unique index `api_token_token_hash_unique` on `api_token` (`token_hash`);');
    this.addSql(
      'create table `connection` (`id` integer not null primary key autoincrement, `provider` text not null, `label` text not null, `credentials` text not null, `base_url` text null, `settings` json not null, `is_enabled` integer not null, `is_visible` integer not null, `display_order` integer not null, `alert_thresholds` json not null, `created_at` datetime not null, `updated_at` datetime not null);',
    );
    this.addSql('create index `connection_display_order_index` on `connection` (`display_order`);');
    this.addSql('create unique index `connection_provider_label_unique` on `connection` (`provider`, `label`);');
  }
}
