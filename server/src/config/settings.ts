import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseHostList } from '@usage-monitor/core';

/** Every runtime setting (DESIGN.md section 9), parsed once at startup. */
export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  encryptionKey: string | null;
  adminSessionExpireHours: number;
  adminRecoveryCodeExpireMinutes: number;
  autoPollEnabled: boolean;
  autoPollIntervalMinutes: number;
  snapshotRetentionDays: number;
  analyticsHourlyRetentionDays: number;
  requestTimeoutSeconds: number;
  pollConcurrency: number;
  workerThreads: number;
  homepageAllowedHosts: string[];
  customHttpAllowedHosts: string[];
  datasourceAllowedHosts: string[];
  corsOrigins: string[];
  plugins: string[] | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  bodyLimitBytes: number;
  loginMaxAttempts: number;
  loginWindowSeconds: number;
  /** Trust X-Forwarded-* headers (the client address used for login throttling). */
  trustProxy: boolean;
}

/** A bad setting: startup stops with a message naming the variable. */
export class SettingsError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid setting ${variable}: ${message}`);
    this.name = 'SettingsError';
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  if (!/^-?\d+$/.test(raw.trim())) throw new SettingsError(name, `expected a whole number, got "${raw}"`);
  const v = Number(raw);
  if (v < min || v > max) throw new SettingsError(name, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

/** A decimal number (AUTO_POLL_INTERVAL_MINUTES may be a fraction: 0.5 is 30 seconds). */
function decimal(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw new SettingsError(name, `expected a number, got "${raw}"`);
  const v = Number(raw);
  if (v < min || v > max) throw new SettingsError(name, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new SettingsError(name, `expected true or false, got "${raw}"`);
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Reads `usage-monitor.config.json` (optional) for the plugin list. */
function configFilePlugins(dir: string): string[] | null {
  const file = path.join(dir, 'usage-monitor.config.json');
  if (!fs.existsSync(file)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SettingsError('usage-monitor.config.json', `not valid JSON (${(err as Error).message})`);
  }
  const plugins = (parsed as { plugins?: unknown }).plugins;
  if (plugins === undefined) return null;
  if (!Array.isArray(plugins) || plugins.some((p) => typeof p !== 'string' || p.trim() === '')) {
    throw new SettingsError('usage-monitor.config.json', '"plugins" must be an array of package names');
  }
  return plugins as string[];
}

export function loadSettings(env: Env = process.env, cwd = process.cwd()): Settings {
  const databaseUrl = env.DATABASE_URL?.trim() || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new SettingsError('DATABASE_URL', 'only postgres:// or postgresql:// URLs are supported (leave unset for SQLite)');
  }
  const host = env.HOST?.trim() || '0.0.0.0';
  const logLevel = (env.LOG_LEVEL?.trim().toLowerCase() || 'info') as Settings['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingsError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  const corsOrigins = list(env, 'CORS_ORIGINS');
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/]+$/.test(origin)) {
      throw new SettingsError('CORS_ORIGINS', `"${origin}" is not an origin like https://example.com`);
    }
  }
  const pluginsEnv = list(env, 'PLUGINS');
  // Fetches are I/O-bound: a few threads suffice; more only cost memory.
  const cpus = Math.max(1, Math.min(4, os.availableParallelism()));
  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host,
    dataDir: path.resolve(cwd, env.DATA_DIR?.trim() || './data'),
    databaseUrl,
    encryptionKey: env.ENCRYPTION_KEY?.trim() || null,
    adminSessionExpireHours: int(env, 'ADMIN_SESSION_EXPIRE_HOURS', 24, 1, 24 * 365),
    adminRecoveryCodeExpireMinutes: int(env, 'ADMIN_RECOVERY_CODE_EXPIRE_MINUTES', 30, 1, 24 * 60),
    autoPollEnabled: bool(env, 'AUTO_POLL_ENABLED', true),
    autoPollIntervalMinutes: decimal(env, 'AUTO_POLL_INTERVAL_MINUTES', 60, 0.05, 7 * 24 * 60),
    snapshotRetentionDays: int(env, 'SNAPSHOT_RETENTION_DAYS', 180, 1, 36500),
    analyticsHourlyRetentionDays: int(env, 'ANALYTICS_HOURLY_RETENTION_DAYS', 365, 1, 36500),
    requestTimeoutSeconds: int(env, 'REQUEST_TIMEOUT_SECONDS', 20, 1, 600),
    pollConcurrency: int(env, 'POLL_CONCURRENCY', 16, 1, 1000),
    workerThreads: int(env, 'WORKER_THREADS', cpus, 1, 64),
    homepageAllowedHosts: parseHostList(env.HOMEPAGE_ALLOWED_HOSTS),
    customHttpAllowedHosts: parseHostList(env.CUSTOM_HTTP_ALLOWED_HOSTS),
    datasourceAllowedHosts: parseHostList(env.DATASOURCE_ALLOWED_HOSTS),
    corsOrigins,
    plugins: pluginsEnv.length > 0 ? pluginsEnv : configFilePlugins(cwd),
    logLevel,
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    loginMaxAttempts: int(env, 'LOGIN_MAX_ATTEMPTS', 5, 1, 1000),
    loginWindowSeconds: int(env, 'LOGIN_WINDOW_SECONDS', 300, 1, 86400),
    trustProxy: bool(env, 'TRUST_PROXY', false),
  };
}
