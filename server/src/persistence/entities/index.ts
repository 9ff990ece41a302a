import { EntitySchema } from '@mikro-orm/core';
import type { ThresholdRule } from '@usage-monitor/core';

/**
 * Entities are declared with EntitySchema (no decorators, no emitted metadata). Column names come
 * from the underscore naming strategy; the migrations in ./migrations create exactly these columns,
 * and a test checks that the schema the entities describe matches what the migrations built.
 */

export class AppSetting {
  key!: string;
  value!: string;
}

export const AppSettingSchema = new EntitySchema<AppSetting>({
  class: AppSetting,
  tableName: 'app_setting',
  properties: {
    key: { type: 'string', length: 100, primary: true },
    value: { type: 'text' },
  },
});

/** The single admin of this instance (row id 1). */
export class AdminCredential {
  id!: number;
  passwordHash!: string | null;
  setupCodeHash!: string | null;
  setupCodeExpiresAt!: Date | null;
  resetCodeHash!: string | null;
  resetCodeExpiresAt!: Date | null;
  updatedAt!: Date;
}

export const AdminCredentialSchema = new EntitySchema<AdminCredential>({
  class: AdminCredential,
  tableName: 'admin_credential',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: false },
    passwordHash: { type: 'text', nullable: true },
    setupCodeHash: { type: 'string', length: 64, nullable: true },
    setupCodeExpiresAt: { type: 'datetime', nullable: true },
    resetCodeHash: { type: 'string', length: 64, nullable: true },
    resetCodeExpiresAt: { type: 'datetime', nullable: true },
    updatedAt: { type: 'datetime' },
  },
});

export class AdminSession {
  id!: number;
  tokenHash!: string;
  createdAt!: Date;
  expiresAt!: Date;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
}

export const AdminSessionSchema = new EntitySchema<AdminSession>({
  class: AdminSession,
  tableName: 'admin_session',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    tokenHash: { type: 'string', length: 64, unique: 'admin_session_token_hash_unique' },
    createdAt: { type: 'datetime' },
    expiresAt: { type: 'datetime' },
    revokedAt: { type: 'datetime', nullable: true },
    lastUsedAt: { type: 'datetime', nullable: true },
  },
});

export class ApiToken {
  id!: number;
  name!: string;
  tokenHash!: string;
  tokenPrefix!: string;
  scopes!: string[];
  createdAt!: Date;
  expiresAt!: Date | null;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
}

export const ApiTokenSchema = new EntitySchema<ApiToken>({
  class: ApiToken,
  tableName: 'api_token',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    name: { type: 'string', length: 120 },
    tokenHash: { type: 'string', length: 64, unique: 'api_token_token_hash_unique' },
    tokenPrefix: { type: 'string', length: 20 },
    scopes: { type: 'json' },
    createdAt: { type: 'datetime' },
    expiresAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    lastUsedAt: { type: 'datetime', nullable: true },
  },
});

/** A configured account of one provider plugin (API.md "Connection record"). */
export class Connection {
  id!: number;
  provider!: string;
  label!: string;
  /** AES-256-GCM ciphertext of the credentials JSON (see services/crypto.ts). */
  credentials!: string;
  baseUrl!: string | null;
  settings!: Record<string, unknown>;
  isEnabled!: boolean;
  isVisible!: boolean;
  displayOrder!: number;
  alertThresholds!: ThresholdRule[];
  createdAt!: Date;
  updatedAt!: Date;
}

export const ConnectionSchema = new EntitySchema<Connection>({
  class: Connection,
  tableName: 'connection',
  indexes: [{ name: 'connection_display_order_index', properties: ['displayOrder'] }],
  uniques: [{ name: 'connection_provider_label_unique', properties: ['provider', 'label'] }],
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    provider: { type: 'string', length: 60 },
    label: { type: 'string', length: 120 },
    credentials: { type: 'text' },
    baseUrl: { type: 'string', length: 2048, nullable: true },
    settings: { type: 'json' },
    isEnabled: { type: 'boolean' },
    isVisible: { type: 'boolean' },
    displayOrder: { type: 'integer' },
    alertThresholds: { type: 'json' },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});

export const entities = [AppSettingSchema, AdminCredentialSchema, AdminSessionSchema, ApiTokenSchema, ConnectionSchema];
