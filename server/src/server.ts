import http from 'node:http';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { DestinationStream, Logger } from 'pino';
import type { Clock } from '@usage-monitor/core';
import { loadSettings, type Settings } from './config/settings.js';
import { createLogger } from './logging.js';
import { openDatabase, migrate, type Database } from './persistence/orm.js';
import { AppSetting } from './persistence/entities/index.js';
import { CredentialCipher, EncryptionKeyError, resolveEncryptionKey } from './services/crypto.js';
import { discoverPlugins, loadPlugins } from './plugins/loader.js';
import { createContainer, resolveServices, type Services } from './container.js';
import { createApp, type AppBundle } from './http/app.js';

export const VERSION: string = (() => {
  try {
    return (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

export interface StartOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  clock?: Clock;
  logDestination?: DestinationStream;
  /** Receives every SQL statement (tests count them). */
  onQuery?: (sql: string) => void;
  /** Listen (default) or only build the app. */
  listen?: boolean;
}

export interface RunningServer {
  settings: Settings;
  services: Services;
  bundle: AppBundle;
  /** The base URL, e.g. http://127.0.0.1:8080 (null when not listening). */
  url: string | null;
  /** The setup code issued at this start, when no password is set yet (for tests and the console). */
  setupCode: string | null;
  close(): Promise<void>;
}

const KEY_CHECK = 'encryption_key_check';
const KEY_CHECK_PLAINTEXT = 'usage-monitor credential key check';

/**
 * Proves the key in use is the one that encrypted what is stored: a start with another key stops
 * here, before anything could be written with it.
 */
async function checkEncryptionKey(db: Database, settings: Settings, logger: Logger): Promise<CredentialCipher> {
  const em = db.em();
  const stored = await em.findOne(AppSetting, { key: KEY_CHECK });
  const source = resolveEncryptionKey(settings.encryptionKey, settings.dataDir, stored !== null);
  const cipher = new CredentialCipher(source.key);
  if (stored) {
    let ok = false;
    try {
      ok = cipher.decrypt(stored.value) === KEY_CHECK_PLAINTEXT;
    } catch {
      ok = false;
    }
    if (!ok) {
      const where = source.origin === 'env' ? 'ENCRYPTION_KEY' : source.file;
      throw new EncryptionKeyError(
        `The encryption key from ${where} is not the key that encrypted the stored credentials. ` +
          'Start with the original key; nothing was changed.',
      );
    }
  } else {
    em.create(AppSetting, { key: KEY_CHECK, value: cipher.encrypt(KEY_CHECK_PLAINTEXT) });
    await em.flush();
  }
  if (source.origin === 'generated') {
    logger.warn({ file: source.file }, 'Generated a new credential encryption key; back it up (or set ENCRYPTION_KEY): without it stored credentials cannot be read');
  }
  return cipher;
}

export async function startServer(opts: StartOptions = {}): Promise<RunningServer> {
  const settings = loadSettings(opts.env ?? process.env, opts.cwd);
  const logger = createLogger(settings, opts.logDestination);
  const clock: Clock = opts.clock ?? { now: () => new Date() };
  const db = await openDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, onQuery: opts.onQuery });
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    const cipher = await checkEncryptionKey(db, settings, logger);
    const pluginNames = settings.plugins ?? discoverPlugins();
    const registry = await loadPlugins(pluginNames);
    logger.info({ providers: registry.listProviders().map((p) => p.plugin.id) }, 'plugins loaded');
    const container = createContainer({ settings, logger, clock, db, registry, cipher });
    const services = resolveServices(container, VERSION);
    const setupCode = await services.auth.issueSetupCodeIfNeeded();
    const bundle = createApp(services);

    let server: http.Server | null = null;
    let url: string | null = null;
    if (opts.listen !== false) {
      server = http.createServer(bundle.app.callback());
      server.keepAliveTimeout = 5_000;
      server.requestTimeout = 60_000;
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(settings.port, settings.host, () => resolve());
      });
      const addr = server.address() as AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${addr.port}`;
      logger.info({ url, database: db.dialect }, 'usage-monitor listening');
    }
    services.scheduler.start();
    services.retention.start();

    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        if (server) {
          // Stop accepting, let in-flight requests finish briefly, then cut idle keep-alives.
          const done = new Promise<void>((resolve) => server!.close(() => resolve()));
          server.closeIdleConnections();
          const timer = setTimeout(() => server!.closeAllConnections(), 5_000);
          await done;
          clearTimeout(timer);
        }
        // Then stop background work: no new polls, finish the ones in flight, close the pool.
        await services.scheduler.stop();
        await services.retention.stop();
        await services.poll.drain();
        await services.pool.close();
        await db.close();
        logger.info('usage-monitor stopped');
      })());
    return { settings, services, bundle, url, setupCode, close };
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
