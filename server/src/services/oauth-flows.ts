import type { Logger } from 'pino';
import type { Clock } from '@usage-monitor/core';
import type { Settings } from '../config/settings.js';
import type { PluginRegistry } from '../plugins/registry.js';
import type { ConnectionService } from './connections.js';

/** OAuth device and browser flows for providers whose plugin declares them (API.md). */
export class OAuthFlowService {
  constructor(
    readonly settings: Settings,
    readonly logger: Logger,
    readonly clock: Clock,
    readonly registry: PluginRegistry,
    readonly connections: ConnectionService,
  ) {}
}
