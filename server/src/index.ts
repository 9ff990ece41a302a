export { startServer, VERSION, type RunningServer, type StartOptions } from './server.js';
export { loadSettings, SettingsError, type Settings } from './config/settings.js';
export { PluginLoadError, discoverPlugins, loadPlugins } from './plugins/loader.js';
export { EncryptionKeyError } from './services/crypto.js';
export { API_PREFIX } from './http/router.js';
export type { Route } from './http/route.js';
export { openDatabase, migrate, type Database } from './persistence/orm.js';
