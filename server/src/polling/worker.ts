/**
 * The worker-thread entry of the polling pool. It imports the plugin by package name (cached per
 * thread), builds the plugin context and runs `fetchUsage`. Results and errors are plain data: the
 * main thread validates and persists them. Nothing here touches the database.
 */
import { serializeError, type ProviderPlugin } from '@usage-monitor/core';
import { buildPluginContext, scrubUsage } from '../services/plugin-runtime.js';
import type { PluginLogEntry, PollTask, PollTaskResult } from './protocol.js';

const plugins = new Map<string, Promise<ProviderPlugin>>();

function loadPlugin(packageName: string): Promise<ProviderPlugin> {
  let p = plugins.get(packageName);
  if (!p) {
    p = import(packageName).then((m: { default: ProviderPlugin }) => m.default);
    plugins.set(packageName, p);
  }
  return p;
}

const MAX_LOG_ENTRIES = 50;

export default async function runPoll(task: PollTask): Promise<PollTaskResult> {
  const started = performance.now();
  const logs: PluginLogEntry[] = [];
  const collect =
    (level: PluginLogEntry['level']) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (logs.length < MAX_LOG_ENTRIES) logs.push({ level, msg, ...(fields ? { fields } : {}) });
    };
  const logger = { debug: collect('debug'), info: collect('info'), warn: collect('warn'), error: collect('error') };
  let secrets: string[] = [];
  try {
    const plugin = await loadPlugin(task.packageName);
    const built = buildPluginContext(plugin, task.connection, {
      timeoutMs: task.timeoutMs,
      allowedHosts: task.allowedHosts,
      clock: { now: () => new Date(Date.now() + task.nowOffsetMs) },
      logger,
    });
    secrets = built.secrets;
    const usage = await plugin.fetchUsage(built.ctx);
    // Structured clone carries the result to the main thread; scrub before it leaves.
    const clean = usage && typeof usage === 'object' ? scrubUsage(usage, secrets) : usage;
    return { ok: true, usage: clean, durationMs: Math.round(performance.now() - started), logs };
  } catch (err) {
    return { ok: false, error: serializeError(err, secrets), durationMs: Math.round(performance.now() - started), logs };
  }
}
