import type { ProviderUsage, SerializedError } from '@usage-monitor/core';

/** What the main thread sends a worker: everything one fetch needs, nothing it does not. */
export interface PollTask {
  packageName: string;
  providerId: string;
  connection: {
    credentials: Record<string, unknown>;
    settings: Record<string, unknown>;
    baseUrl: string | null;
  };
  timeoutMs: number;
  allowedHosts: string[];
  /** The clock of the main thread at dispatch (ms), so tests with a moved clock stay consistent. */
  nowOffsetMs: number;
}

export interface PluginLogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields?: Record<string, unknown>;
}

export type PollTaskResult =
  | { ok: true; usage: ProviderUsage; durationMs: number; logs: PluginLogEntry[] }
  | { ok: false; error: SerializedError; durationMs: number; logs: PluginLogEntry[] };
