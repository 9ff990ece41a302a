/**
 * A small JSON Schema validator for the subset of keywords usage-monitor's own schemas and typical
 * plugin credential/settings schemas use. Core has no dependencies, so the conformance kit cannot
 * use ajv; the server does, and validates the same schemas with it. Unknown keywords are ignored
 * (annotations such as `title`, `description`, `writeOnly`, `examples`).
 *
 * Supported: type, const, enum, required, properties, additionalProperties, minProperties,
 * maxProperties, items, minItems, maxItems, minLength, maxLength, pattern, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not, format (date-time, uri).
 */

export type Schema = Record<string, unknown> | boolean;

export interface SchemaProblem {
  /** JSON pointer of the offending value, `""` for the root. */
  path: string;
  message: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function matchesType(v: unknown, type: string): boolean {
  const actual = typeOf(v);
  if (type === 'number') return actual === 'number' || actual === 'integer';
  return actual === type;
}

/** Structural equality for JSON values (`const`, `enum`). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Whether `s` is an RFC 3339 date-time (what `format: date-time` and `datetime` metrics mean). */
export function isIsoDateTime(s: string): boolean {
  return ISO_DATE_TIME.test(s) && !Number.isNaN(Date.parse(s));
}

const ptr = (path: string, key: string | number) => `${path}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

/** Validates `value` against `schema`; returns every problem found (empty when valid). */
export function validateSchema(schema: Schema, value: unknown, path = ''): SchemaProblem[] {
  if (schema === true) return [];
  if (schema === false) return [{ path, message: 'is not allowed' }];
  const s = schema;
  const out: SchemaProblem[] = [];
  const fail = (message: string, at = path) => out.push({ path: at, message });

  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!types.some((t) => matchesType(value, t))) {
      fail(`must be ${types.join(' or ')} (got ${typeOf(value)})`);
      return out; // the remaining keywords would only add noise
    }
  }
  if ('const' in s && !jsonEqual(value, s.const)) fail(`must equal ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((e) => jsonEqual(value, e))) {
    fail(`must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')} (got ${JSON.stringify(value)})`);
  }

  if (typeof value === 'string') {
    if (typeof s.minLength === 'number' && [...value].length < s.minLength) fail(`must have at least ${s.minLength} characters`);
    if (typeof s.maxLength === 'number' && [...value].length > s.maxLength) fail(`must have at most ${s.maxLength} characters`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) fail(`must match ${s.pattern}`);
    if (s.format === 'date-time' && !isIsoDateTime(value)) fail('must be an RFC 3339 date-time');
    if (s.format === 'uri' && !/^[a-z][a-z0-9+.-]*:/i.test(value)) fail('must be a URI');
  }

  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) fail(`must be >= ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum) fail(`must be <= ${s.maximum}`);
    if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum) fail(`must be > ${s.exclusiveMinimum}`);
    if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum) fail(`must be < ${s.exclusiveMaximum}`);
  }

  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) fail(`must have at least ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) fail(`must have at most ${s.maxItems} items`);
    if (isObject(s.items) || typeof s.items === 'boolean') {
      value.forEach((item, i) => out.push(...validateSchema(s.items as Schema, item, ptr(path, i))));
    }
  }

  if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined);
    const props = isObject(s.properties) ? (s.properties as Record<string, Schema>) : {};
    if (Array.isArray(s.required)) {
      for (const r of s.required as string[]) if (value[r] === undefined) fail(`must have required property "${r}"`, ptr(path, r));
    }
    if (typeof s.minProperties === 'number' && keys.length < s.minProperties) fail(`must have at least ${s.minProperties} properties`);
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) fail(`must have at most ${s.maxProperties} properties`);
    for (const k of keys) {
      const sub = props[k];
      if (sub !== undefined) out.push(...validateSchema(sub, value[k], ptr(path, k)));
      else if (s.additionalProperties === false) fail('is not an allowed property', ptr(path, k));
      else if (isObject(s.additionalProperties)) out.push(...validateSchema(s.additionalProperties, value[k], ptr(path, k)));
    }
  }

  if (Array.isArray(s.allOf)) for (const sub of s.allOf as Schema[]) out.push(...validateSchema(sub, value, path));
  if (Array.isArray(s.anyOf) && !(s.anyOf as Schema[]).some((sub) => validateSchema(sub, value, path).length === 0)) {
    fail('must match a schema in anyOf');
  }
  if (Array.isArray(s.oneOf)) {
    const n = (s.oneOf as Schema[]).filter((sub) => validateSchema(sub, value, path).length === 0).length;
    if (n !== 1) fail(`must match exactly one schema in oneOf (matched ${n})`);
  }
  if (s.not !== undefined && validateSchema(s.not as Schema, value, path).length === 0) fail('must not match the "not" schema');
  return out;
}

/**
 * Fills in `default`s of missing object properties, recursively, as the server's validator does
 * (ajv `useDefaults`). Returns a new value; the input is not changed.
 */
export function applyDefaults(schema: Schema, value: unknown): unknown {
  if (!isObject(schema) || !isObject(value) || !isObject(schema.properties)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [k, sub] of Object.entries(schema.properties as Record<string, Schema>)) {
    if (!isObject(sub)) continue;
    if (out[k] === undefined && 'default' in sub) out[k] = structuredClone(sub.default);
    if (out[k] !== undefined) out[k] = applyDefaults(sub, out[k]);
  }
  return out;
}

/** Formats problems as `path: message` lines, with `label` standing for the root. */
export function formatProblems(problems: SchemaProblem[], label: string): string[] {
  return problems.map((p) => `${label}${p.path}: ${p.message}`);
}
