import type { Principal } from '../http/auth.js';

interface Entry {
  principal: Principal;
  /** When the session or token itself expires (exact, checked on every hit). */
  expiresAtMs: number | null;
  /** When this cache entry must be re-read from the database. */
  staleAtMs: number;
  lastUsedWrittenMs: number;
}

/**
 * Bearer-token lookups are on every authenticated request; this keeps recent answers in memory.
 * Revocation in this process clears the cache at once; another process sharing the database sees a
 * revocation within TTL_MS (documented in the README). Expiry is always exact: it is checked
 * against the clock on each hit.
 */
export class PrincipalCache {
  static readonly TTL_MS = 5_000;
  private readonly entries = new Map<string, Entry>();

  get(tokenHash: string, nowMs: number): Entry | undefined {
    const e = this.entries.get(tokenHash);
    if (!e) return undefined;
    if (e.staleAtMs <= Date.now()) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    if (e.expiresAtMs !== null && e.expiresAtMs <= nowMs) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return e;
  }

  set(tokenHash: string, principal: Principal, expiresAtMs: number | null, lastUsedWrittenMs: number): void {
    if (this.entries.size > 10_000) this.entries.clear();
    this.entries.set(tokenHash, { principal, expiresAtMs, staleAtMs: Date.now() + PrincipalCache.TTL_MS, lastUsedWrittenMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
