import { describeConformance } from '@usage-monitor/core/testing';
import plugin from '../src/index.js';

// The kit checks each case's metrics against metricsFor(case settings): this plugin's metrics come
// from the connection's settings (capabilities.dynamic_metrics).
describeConformance(plugin, { dir: new URL('../testcases/', import.meta.url) });
