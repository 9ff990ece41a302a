import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import type { Logger } from 'pino';
import type { Clock } from '@usage-monitor/core';
import type { Settings } from './config/settings.js';
import type { Database } from './persistence/orm.js';
import type { PluginRegistry } from './plugins/registry.js';
import { AdminAuthService } from './services/admin-auth.js';
import { ApiTokenService } from './services/api-tokens.js';
import { ConnectionService } from './services/connections.js';
import { CredentialCipher } from './services/crypto.js';
import { ProviderRunner } from './services/provider-runner.js';
import { PrincipalCache } from './services/principal-cache.js';
import { OAuthFlowService } from './services/oauth-flows.js';
import { PollingStore } from './persistence/polling-store.js';
import { PollPool } from './polling/pool.js';
import { PollService } from './services/poll.js';
import { UsageService } from './services/usage.js';
import { Scheduler } from './services/scheduler.js';
import { RetentionService } from './services/retention.js';

/**
 * Dependency injection lives here only. Services are plain classes; each is registered with a
 * factory that names every dependency explicitly, so nothing depends on emitted decorator metadata
 * (tsx and esbuild drop it).
 */
export const TOKENS = {
  settings: Symbol('Settings'),
  logger: Symbol('Logger'),
  clock: Symbol('Clock'),
  db: Symbol('Database'),
  registry: Symbol('PluginRegistry'),
  cipher: Symbol('CredentialCipher'),
  runner: Symbol('ProviderRunner'),
  principalCache: Symbol('PrincipalCache'),
  auth: Symbol('AdminAuthService'),
  apiTokens: Symbol('ApiTokenService'),
  connections: Symbol('ConnectionService'),
  oauth: Symbol('OAuthFlowService'),
  polling: Symbol('PollingStore'),
  pool: Symbol('PollPool'),
  poll: Symbol('PollService'),
  usage: Symbol('UsageService'),
  scheduler: Symbol('Scheduler'),
  retention: Symbol('RetentionService'),
} as const;

/** What route handlers receive. */
export interface Services {
  settings: Settings;
  logger: Logger;
  clock: Clock;
  db: Database;
  registry: PluginRegistry;
  auth: AdminAuthService;
  apiTokens: ApiTokenService;
  connections: ConnectionService;
  oauth: OAuthFlowService;
  polling: PollingStore;
  pool: PollPool;
  poll: PollService;
  usage: UsageService;
  scheduler: Scheduler;
  retention: RetentionService;
  version: string;
}

export interface ContainerInput {
  settings: Settings;
  logger: Logger;
  clock: Clock;
  db: Database;
  registry: PluginRegistry;
  cipher: CredentialCipher;
}

export function createContainer(input: ContainerInput): DependencyContainer {
  const c = rootContainer.createChildContainer();
  c.register(TOKENS.settings, { useValue: input.settings });
  c.register(TOKENS.logger, { useValue: input.logger });
  c.register(TOKENS.clock, { useValue: input.clock });
  c.register(TOKENS.db, { useValue: input.db });
  c.register(TOKENS.registry, { useValue: input.registry });
  c.register(TOKENS.cipher, { useValue: input.cipher });
  const single = <T>(token: symbol, factory: (d: DependencyContainer) => T) => {
    let instance: T | undefined;
    c.register(token, { useFactory: (d) => (instance ??= factory(d)) });
  };
  single(TOKENS.runner, (d) => new ProviderRunner(d.resolve(TOKENS.settings), d.resolve(TOKENS.logger), d.resolve(TOKENS.clock)));
  single(TOKENS.principalCache, () => new PrincipalCache());
  single(TOKENS.apiTokens, (d) => new ApiTokenService(d.resolve(TOKENS.db), d.resolve(TOKENS.clock), d.resolve(TOKENS.principalCache)));
  single(
    TOKENS.auth,
    (d) =>
      new AdminAuthService(
        d.resolve(TOKENS.db),
        d.resolve(TOKENS.settings),
        d.resolve(TOKENS.logger),
        d.resolve(TOKENS.clock),
        d.resolve(TOKENS.apiTokens),
        d.resolve(TOKENS.principalCache),
      ),
  );
  single(
    TOKENS.connections,
    (d) =>
      new ConnectionService(d.resolve(TOKENS.db), d.resolve(TOKENS.registry), d.resolve(TOKENS.cipher), d.resolve(TOKENS.clock), d.resolve(TOKENS.runner)),
  );
  single(
    TOKENS.oauth,
    (d) =>
      new OAuthFlowService(d.resolve(TOKENS.settings), d.resolve(TOKENS.logger), d.resolve(TOKENS.clock), d.resolve(TOKENS.registry), d.resolve(TOKENS.connections)),
  );
  single(TOKENS.polling, (d) => {
    const store = new PollingStore(d.resolve(TOKENS.db));
    // A connection's history goes with it, in the delete's transaction.
    d.resolve<ConnectionService>(TOKENS.connections).deleteHooks.push((em, id) => store.deleteConnectionData(em.getTransactionContext() ?? store.sql.knex, id));
    return store;
  });
  single(TOKENS.pool, (d) => new PollPool(d.resolve(TOKENS.settings), d.resolve(TOKENS.logger)));
  single(
    TOKENS.poll,
    (d) =>
      new PollService(
        d.resolve(TOKENS.settings),
        d.resolve(TOKENS.logger),
        d.resolve(TOKENS.clock),
        d.resolve(TOKENS.registry),
        d.resolve(TOKENS.polling),
        d.resolve(TOKENS.pool),
        d.resolve(TOKENS.connections),
        d.resolve(TOKENS.cipher),
      ),
  );
  single(TOKENS.usage, (d) => new UsageService(d.resolve(TOKENS.clock), d.resolve(TOKENS.registry), d.resolve(TOKENS.polling), d.resolve(TOKENS.poll)));
  single(TOKENS.scheduler, (d) => {
    const scheduler = new Scheduler(d.resolve(TOKENS.settings), d.resolve(TOKENS.logger), d.resolve(TOKENS.clock), d.resolve(TOKENS.polling), d.resolve(TOKENS.poll));
    d.resolve<ConnectionService>(TOKENS.connections).changeListeners.push(() => scheduler.nudge());
    return scheduler;
  });
  single(TOKENS.retention, (d) => new RetentionService(d.resolve(TOKENS.settings), d.resolve(TOKENS.logger), d.resolve(TOKENS.clock), d.resolve(TOKENS.polling)));
  return c;
}

export function resolveServices(c: DependencyContainer, version: string): Services {
  return {
    settings: c.resolve(TOKENS.settings),
    logger: c.resolve(TOKENS.logger),
    clock: c.resolve(TOKENS.clock),
    db: c.resolve(TOKENS.db),
    registry: c.resolve(TOKENS.registry),
    auth: c.resolve(TOKENS.auth),
    apiTokens: c.resolve(TOKENS.apiTokens),
    connections: c.resolve(TOKENS.connections),
    oauth: c.resolve(TOKENS.oauth),
    polling: c.resolve(TOKENS.polling),
    pool: c.resolve(TOKENS.pool),
    poll: c.resolve(TOKENS.poll),
    usage: c.resolve(TOKENS.usage),
    scheduler: c.resolve(TOKENS.scheduler),
    retention: c.resolve(TOKENS.retention),
    version,
  };
}
