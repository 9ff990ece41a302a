import { describeConformance } from '@usage-monitor/core/testing';
import plugin from '../src/index.js';

describeConformance(plugin, { dir: new URL('../testcases/', import.meta.url) });
