import type { DataSourcePlugin, ProviderPlugin } from '@usage-monitor/core';

export interface LoadedProvider {
  plugin: ProviderPlugin;
  /** The npm package the plugin came from; worker tasks import it by this name. */
  packageName: string;
  version: string;
}

export interface LoadedDataSource {
  plugin: DataSourcePlugin;
  packageName: string;
  version: string;
}

/** The single source of which plugins exist: routes, OpenAPI, validation and workers read it. */
export class PluginRegistry {
  private readonly providers = new Map<string, LoadedProvider>();
  private readonly dataSources = new Map<string, LoadedDataSource>();

  addProvider(entry: LoadedProvider): void {
    const existing = this.providers.get(entry.plugin.id);
    if (existing) {
      throw new Error(`Provider id "${entry.plugin.id}" of ${entry.packageName} is already used by ${existing.packageName}`);
    }
    this.providers.set(entry.plugin.id, entry);
  }

  addDataSource(entry: LoadedDataSource): void {
    const existing = this.dataSources.get(entry.plugin.id);
    if (existing) {
      throw new Error(`Data source id "${entry.plugin.id}" of ${entry.packageName} is already used by ${existing.packageName}`);
    }
    this.dataSources.set(entry.plugin.id, entry);
  }

  provider(id: string): LoadedProvider | undefined {
    return this.providers.get(id);
  }

  listProviders(): LoadedProvider[] {
    return [...this.providers.values()].sort((a, b) => a.plugin.name.localeCompare(b.plugin.name));
  }

  dataSource(id: string): LoadedDataSource | undefined {
    return this.dataSources.get(id);
  }

  listDataSources(): LoadedDataSource[] {
    return [...this.dataSources.values()].sort((a, b) => a.plugin.name.localeCompare(b.plugin.name));
  }
}
