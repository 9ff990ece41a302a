import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { metricSchema, nativeBucketSchema, type Metric, type NativeBucket } from '../domain/metrics.js';
import type { FixtureEntry } from './fixture-server.js';
export { BASE_URL_PLACEHOLDER, substituteBaseUrl } from './fixture-server.js';
import { formatProblems, isIsoDateTime, validateSchema } from './schema.js';

/**
 * Reading `testcases/<case>/` folders. The format is documented in core/README.md:
 * case.json (optional), credentials.json, settings.json (optional), responses/NN-name.json, and
 * exactly one of expected.json or expected-error.json.
 */

/** The clock of a case without `now` in case.json. */
export const DEFAULT_NOW = '2026-11-20T12:00:00Z';

export const UPSTREAM_ERROR_CODES = ['auth_error', 'rate_limited', 'upstream_error', 'timeout', 'schema_drift', 'config_error'] as const;
export type UpstreamErrorCode = (typeof UPSTREAM_ERROR_CODES)[number];

export interface ExpectedUsage {
  status: 'healthy' | 'degraded';
  /** Compared exactly when present. */
  summary?: string;
  /** Compared exactly, in order. */
  metrics: Metric[];
  /** Compared exactly when present. */
  native?: NativeBucket[];
  /** Rotated credentials; compared exactly when present. */
  credentials?: Record<string, unknown>;
}

export interface ExpectedError {
  code: UpstreamErrorCode;
  message_includes?: string;
  retry_after_ms?: number | null;
}

export interface TestCase {
  name: string;
  dir: string;
  description: string | null;
  /** ISO time `ctx.clock.now()` returns. */
  now: string;
  /** Appended to the fixture server URL to form ctx.baseUrl, e.g. `/api/v1`. */
  basePath: string;
  /** When true, the generic checks are not derived from this case. */
  skipGeneric: boolean;
  /** As read from the files; `{{base_url}}` is substituted when the case runs. */
  credentials: Record<string, unknown>;
  settings: Record<string, unknown>;
  responses: FixtureEntry[];
  expected: ExpectedUsage | null;
  expectedError: ExpectedError | null;
}

export interface LoadedCases {
  cases: TestCase[];
  /** Problems with the folder or a case's files, as `[case name, message]`. */
  problems: Array<[string, string]>;
}

const caseFileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    description: { type: 'string' },
    now: { type: 'string', format: 'date-time' },
    base_path: { type: 'string', pattern: '^(/[^?#]*)?$' },
    skip_generic: { type: 'boolean' },
  },
} as const;

const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

const responseFileSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['request', 'response'],
  properties: {
    description: { type: 'string' },
    request: {
      type: 'object',
      additionalProperties: false,
      required: ['path'],
      properties: {
        method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] },
        path: { type: 'string', pattern: '^/' },
        query: { type: 'object', additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } },
        headers: stringMap,
        body: {},
      },
    },
    response: {
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { type: 'integer', minimum: 100, maximum: 599 },
        headers: stringMap,
        body: {},
        body_text: { type: 'string' },
        delay_ms: { type: 'integer', minimum: 0 },
        hang: { type: 'boolean' },
      },
    },
    optional: { type: 'boolean' },
    repeat: { type: 'boolean' },
  },
} as const;

const expectedSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'metrics'],
  properties: {
    status: { enum: ['healthy', 'degraded'] },
    summary: { type: 'string' },
    metrics: { type: 'array', items: metricSchema },
    native: { type: 'array', items: nativeBucketSchema },
    credentials: { type: 'object' },
  },
} as const;

const expectedErrorSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['code'],
  properties: {
    code: { enum: [...UPSTREAM_ERROR_CODES] },
    message_includes: { type: 'string', minLength: 1 },
    retry_after_ms: { type: ['integer', 'null'], minimum: 0 },
  },
} as const;

/** Accepts a path or a `file:` URL (`new URL('../testcases/', import.meta.url)`). */
export function toPath(dir: string | URL): string {
  return dir instanceof URL || dir.startsWith('file:') ? fileURLToPath(dir) : path.resolve(dir);
}

/** The case folder names in `dir`, sorted; names starting with `.` or `_` are ignored. */
export function listCaseNames(dir: string | URL): string[] {
  const root = toPath(dir);
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && !d.name.startsWith('_'))
    .map((d) => d.name)
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

function readJson(file: string, problems: string[]): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
  } catch (err) {
    problems.push(`${path.basename(file)}: ${(err as Error).message}`);
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function loadCase(root: string, name: string): { testCase: TestCase | null; problems: string[] } {
  const dir = path.join(root, name);
  const problems: string[] = [];
  const file = (f: string) => path.join(dir, f);
  const check = (value: unknown, schema: Record<string, unknown>, label: string) => {
    const p = validateSchema(schema, value);
    problems.push(...formatProblems(p, label));
    return p.length === 0;
  };

  let caseFile: Record<string, unknown> = {};
  if (fs.existsSync(file('case.json'))) {
    const v = readJson(file('case.json'), problems);
    if (v !== undefined && check(v, caseFileSchema, 'case.json') && isObject(v)) caseFile = v;
  }

  let credentials: Record<string, unknown> = {};
  if (!fs.existsSync(file('credentials.json'))) problems.push('credentials.json: missing (use {} for a plugin without credentials)');
  else {
    const v = readJson(file('credentials.json'), problems);
    if (v !== undefined) {
      if (isObject(v)) credentials = v;
      else problems.push('credentials.json: must be a JSON object');
    }
  }

  let settings: Record<string, unknown> = {};
  if (fs.existsSync(file('settings.json'))) {
    const v = readJson(file('settings.json'), problems);
    if (v !== undefined) {
      if (isObject(v)) settings = v;
      else problems.push('settings.json: must be a JSON object');
    }
  }

  const responses: FixtureEntry[] = [];
  const responsesDir = file('responses');
  if (fs.existsSync(responsesDir)) {
    const names = fs
      .readdirSync(responsesDir)
      .filter((f) => f.endsWith('.json'))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    for (const f of names) {
      const v = readJson(path.join(responsesDir, f), problems);
      if (v === undefined || !check(v, responseFileSchema, `responses/${f}`)) continue;
      const entry = v as FixtureEntry;
      for (const h of Object.keys(entry.request.headers ?? {})) {
        if (h !== h.toLowerCase()) problems.push(`responses/${f}/request/headers/${h}: header names must be lower-case`);
      }
      if (entry.response.body !== undefined && entry.response.body_text !== undefined) {
        problems.push(`responses/${f}/response: give either body or body_text, not both`);
      }
      responses.push({ ...entry, name: f });
    }
  }

  const hasExpected = fs.existsSync(file('expected.json'));
  const hasError = fs.existsSync(file('expected-error.json'));
  let expected: ExpectedUsage | null = null;
  let expectedError: ExpectedError | null = null;
  if (hasExpected === hasError) {
    problems.push('the case needs exactly one of expected.json and expected-error.json');
  } else if (hasExpected) {
    const v = readJson(file('expected.json'), problems);
    if (v !== undefined && check(v, expectedSchema, 'expected.json')) expected = v as ExpectedUsage;
  } else {
    const v = readJson(file('expected-error.json'), problems);
    if (v !== undefined && check(v, expectedErrorSchema, 'expected-error.json')) expectedError = v as ExpectedError;
  }

  const now = typeof caseFile.now === 'string' && isIsoDateTime(caseFile.now) ? caseFile.now : DEFAULT_NOW;
  const testCase: TestCase = {
    name,
    dir,
    description: typeof caseFile.description === 'string' ? caseFile.description : null,
    now,
    basePath: typeof caseFile.base_path === 'string' ? caseFile.base_path.replace(/\/+$/, '') : '',
    skipGeneric: caseFile.skip_generic === true,
    credentials,
    settings,
    responses,
    expected,
    expectedError,
  };
  return { testCase: problems.length === 0 ? testCase : null, problems };
}

/** Loads every case folder of `dir`. A case with problems is reported and not returned. */
export function loadTestCases(dir: string | URL): LoadedCases {
  const root = toPath(dir);
  const out: LoadedCases = { cases: [], problems: [] };
  if (!fs.existsSync(root)) {
    out.problems.push(['(testcases)', `the folder ${root} does not exist`]);
    return out;
  }
  for (const name of listCaseNames(root)) {
    const { testCase, problems } = loadCase(root, name);
    for (const p of problems) out.problems.push([name, p]);
    if (testCase) out.cases.push(testCase);
  }
  if (out.cases.length === 0 && out.problems.length === 0) out.problems.push(['(testcases)', `no case folders in ${root}`]);
  return out;
}
