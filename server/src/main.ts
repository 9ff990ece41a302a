#!/usr/bin/env node
import { startServer } from './server.js';
import { SettingsError } from './config/settings.js';
import { PluginLoadError } from './plugins/loader.js';
import { EncryptionKeyError } from './services/crypto.js';

/** Process entry: settings -> database -> migrations -> plugins -> listen; graceful shutdown. */
async function main(): Promise<void> {
  let running;
  try {
    running = await startServer();
  } catch (err) {
    if (err instanceof SettingsError || err instanceof PluginLoadError || err instanceof EncryptionKeyError) {
      process.stderr.write(`usage-monitor cannot start: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (running.setupCode) {
    process.stderr.write(
      `\n  usage-monitor setup code: ${running.setupCode}\n  Use it once with POST ${running.url}/api/v1/auth/setup to set the admin password.\n\n`,
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.services.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        running.services.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();
