export * from './observations.js';
