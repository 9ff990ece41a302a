import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import {
  checkProviderSemantics,
  dataSourceDescriptorSchema,
  providerDescriptorSchema,
  type DataSourcePlugin,
  type ProviderPlugin,
} from '@usage-monitor/core';
import { fieldErrors } from '../http/validation.js';
import { bodyAjv } from '../http/validation.js';
import { PluginRegistry } from './registry.js';

/** A plugin that cannot be loaded stops startup; the message names the package and the problem. */
export class PluginLoadError extends Error {
  constructor(
    readonly packageName: string,
    problem: string,
  ) {
    super(`Plugin ${packageName}: ${problem}`);
    this.name = 'PluginLoadError';
  }
}

const SCOPE = '@usage-monitor';
const descriptorAjv = new Ajv2020({ allErrors: true, strict: false });
const validateProvider = descriptorAjv.compile(providerDescriptorSchema);
const validateDataSource = descriptorAjv.compile(dataSourceDescriptorSchema);

interface PackageJson {
  name?: string;
  version?: string;
  usageMonitor?: { kind?: 'provider' | 'datasource' };
}

/**
 * First-party plugins are discovered, never listed by hand: every installed `@usage-monitor/*`
 * package whose package.json declares `usageMonitor.kind`.
 */
export function discoverPlugins(fromDir: string = path.dirname(new URL(import.meta.url).pathname)): string[] {
  const found = new Set<string>();
  const require = createRequire(path.join(fromDir, 'noop.js'));
  for (const dir of require.resolve.paths('x') ?? []) {
    const scopeDir = path.join(dir, SCOPE);
    if (!fs.existsSync(scopeDir)) continue;
    for (const name of fs.readdirSync(scopeDir)) {
      const pkg = readPackageJson(path.join(scopeDir, name));
      if (pkg?.usageMonitor?.kind && pkg.name) found.add(pkg.name);
    }
  }
  return [...found].sort();
}

function readPackageJson(dir: string): PackageJson | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson;
  } catch {
    return null;
  }
}

function packageVersion(packageName: string): string {
  try {
    const require = createRequire(import.meta.url);
    let dir = path.dirname(require.resolve(packageName));
    for (let i = 0; i < 5; i++) {
      const pkg = readPackageJson(dir);
      if (pkg?.name === packageName) return pkg.version ?? '0.0.0';
      dir = path.dirname(dir);
    }
  } catch {
    /* resolution through "exports" may hide package.json; the version is informational */
  }
  return '0.0.0';
}

async function importPlugin(packageName: string): Promise<unknown> {
  try {
    const spec = packageName.startsWith('.') || path.isAbsolute(packageName) ? pathToFileURL(path.resolve(packageName)).href : packageName;
    const mod = (await import(spec)) as { default?: unknown };
    return mod.default;
  } catch (err) {
    const code = (err as { code?: string }).code;
    const message = String((err as Error).message);
    if (code === 'ERR_MODULE_NOT_FOUND' && message.includes(`Cannot find package '${packageName}'`)) {
      throw new PluginLoadError(packageName, 'package not found; install it beside the server or remove it from PLUGINS');
    }
    if (code === 'ERR_MODULE_NOT_FOUND' && /[\\/]dist[\\/]/.test(message)) {
      throw new PluginLoadError(packageName, 'the package is installed but not built (its dist/ is missing); run `npm run build`');
    }
    throw new PluginLoadError(packageName, `failed to import (${(err as Error).message})`);
  }
}

function checkSchemas(packageName: string, schemas: Record<string, unknown>): void {
  for (const [field, schema] of Object.entries(schemas)) {
    if (schema === undefined) continue;
    try {
      bodyAjv.compile(schema as object);
    } catch (err) {
      throw new PluginLoadError(packageName, `${field}: not a valid JSON Schema (${(err as Error).message})`);
    }
  }
}

/** Imports and validates every named package and returns the registry. */
export async function loadPlugins(packageNames: string[]): Promise<PluginRegistry> {
  const registry = new PluginRegistry();
  for (const packageName of packageNames) {
    const descriptor = await importPlugin(packageName);
    if (!descriptor || typeof descriptor !== 'object') {
      throw new PluginLoadError(packageName, 'the default export must be a defineProvider() or defineDataSource() descriptor');
    }
    const d = descriptor as { apiVersion?: unknown; kind?: unknown; connection?: unknown };
    if (d.apiVersion !== 1) {
      throw new PluginLoadError(packageName, `apiVersion ${JSON.stringify(d.apiVersion)} is not supported (this server supports 1)`);
    }
    const isDataSource = d.kind === 'datasource' || (d.kind === undefined && d.connection !== undefined);
    const version = packageVersion(packageName);
    if (isDataSource) {
      if (!validateDataSource(descriptor)) {
        const e = fieldErrors(validateDataSource.errors, 'descriptor')[0];
        throw new PluginLoadError(packageName, `${e?.path.replace('/descriptor/', '') ?? 'descriptor'} ${e?.message ?? 'is invalid'}`);
      }
      const plugin = descriptor as DataSourcePlugin;
      if (typeof plugin.fetch !== 'function') throw new PluginLoadError(packageName, 'fetch: must be a function');
      checkSchemas(packageName, { connection: plugin.connection, settings: plugin.settings });
      wrap(packageName, () => registry.addDataSource({ plugin, packageName, version }));
    } else {
      if (!validateProvider(descriptor)) {
        const e = fieldErrors(validateProvider.errors, 'descriptor')[0];
        throw new PluginLoadError(packageName, `${e?.path.replace('/descriptor/', '') ?? 'descriptor'} ${e?.message ?? 'is invalid'}`);
      }
      const plugin = descriptor as ProviderPlugin;
      const problems = checkProviderSemantics(plugin as Parameters<typeof checkProviderSemantics>[0]);
      if (problems.length > 0) throw new PluginLoadError(packageName, problems.join('; '));
      checkSchemas(packageName, { credentials: plugin.credentials, settings: plugin.settings });
      wrap(packageName, () => registry.addProvider({ plugin, packageName, version }));
    }
  }
  return registry;
}

function wrap(packageName: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    throw new PluginLoadError(packageName, (err as Error).message);
  }
}
