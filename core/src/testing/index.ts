/**
 * The plugin conformance kit, `@usage-monitor/core/testing`: runs a provider plugin against its
 * recorded testcases on a local fixture server and checks what every plugin must do. See
 * core/README.md for the testcase folder format.
 */
export {
  checkPlugin,
  checkDescriptor,
  checkMetricSpecs,
  credentialSecrets,
  formatFailures,
  GENERIC_CHECKS,
  type CaseReport,
  type CheckName,
  type CheckStatus,
  type ConformanceFailure,
  type ConformanceOptions,
  type ConformanceReport,
  type ErrorSummary,
  type GenericCheckName,
  type LogLine,
} from './check.js';
export { describeConformance } from './describe.js';
export {
  BASE_URL_PLACEHOLDER,
  isDeepSubset,
  startFixtureServer,
  substituteBaseUrl,
  UNMATCHED_STATUS,
  type FixtureEntry,
  type FixtureRequestMatcher,
  type FixtureResponseSpec,
  type FixtureServer,
  type FixtureServerOptions,
  type RecordedRequest,
  type UnmatchedRequest,
} from './fixture-server.js';
export {
  DEFAULT_NOW,
  listCaseNames,
  loadTestCases,
  type ExpectedError,
  type ExpectedUsage,
  type LoadedCases,
  type TestCase,
} from './testcases.js';
export { applyDefaults, validateSchema, type Schema, type SchemaProblem } from './schema.js';
export { diffMetrics } from './compare.js';
