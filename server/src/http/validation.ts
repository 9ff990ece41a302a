import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ValidationError, type FieldError } from '@usage-monitor/core';

/**
 * Two ajv instances: bodies are validated strictly (a string is not a number), while path and query
 * values, which are always strings on the wire, are coerced to the schema's types.
 */
function makeAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    strict: false,
    removeAdditional: false,
  });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  // OpenAPI annotations that ajv should accept but ignore.
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

export const bodyAjv = makeAjv(false);
export const paramAjv = makeAjv(true);

export type Location = 'body' | 'query' | 'params' | 'credentials' | 'settings' | 'extra';

/** Turns ajv errors into `{ path, message }` entries that name the offending field. */
export function fieldErrors(errors: ErrorObject[] | null | undefined, location: string): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    // anyOf/oneOf wrappers repeat what their branches already said.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    let path = `/${location}${e.instancePath}`;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      path = `${path}/${(e.params as { missingProperty: string }).missingProperty}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      path = `${path}/${(e.params as { additionalProperty: string }).additionalProperty}`;
      message = 'is not an allowed field';
    } else if (e.keyword === 'enum') {
      message = `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    }
    const key = `${path} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path, message });
  }
  return out;
}

export function assertValid(validate: ValidateFunction, data: unknown, location: string): void {
  if (validate(data)) return;
  const errors = fieldErrors(validate.errors, location);
  const first = errors[0];
  throw new ValidationError(first ? `${first.path} ${first.message}` : `Invalid ${location}`, errors);
}

/** Validates against a schema compiled on first use and cached by identity (plugin schemas). */
const cache = new WeakMap<object, ValidateFunction>();
export function validateWith(schema: Record<string, unknown>, data: unknown, location: string): void {
  let fn = cache.get(schema);
  if (!fn) {
    fn = bodyAjv.compile(schema);
    cache.set(schema, fn);
  }
  assertValid(fn, data, location);
}
