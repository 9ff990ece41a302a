/**
 * Redaction of secrets from structured data (snapshot `raw`, logs). Keys that name secrets are
 * replaced wholesale; known secret values are replaced wherever they appear in strings.
 */
export const SECRET_KEY_PATTERN =
  /(^|_|-)(api[_-]?key|apikey|secret|password|passwd|token|access[_-]?token|refresh[_-]?token|id[_-]?token|authorization|cookie|session|credential|credentials|private[_-]?key|client[_-]?secret|code[_-]?verifier)$/i;

export const REDACTED = '[REDACTED]';

export function isSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

export function redactDeep(value: unknown, secrets: readonly string[] = [], depth = 0): unknown {
  if (depth > 50) return REDACTED;
  if (typeof value === 'string') {
    let out = value;
    for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join(REDACTED);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, secrets, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretKey(k) && v !== null && v !== '' ? REDACTED : redactDeep(v, secrets, depth + 1);
    }
    return out;
  }
  return value;
}

/** Every string leaf of a credentials object: the values that must never appear anywhere. */
export function secretValues(credentials: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string' && v.length >= 4) out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(credentials);
  return out;
}
