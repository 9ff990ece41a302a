import { NotFoundError, UnauthorizedError, ValidationError, type Clock } from '@usage-monitor/core';
import type { Database } from '../persistence/orm.js';
import { ApiToken } from '../persistence/entities/index.js';
import type { Principal } from '../http/auth.js';
import type { Scope } from '../http/route.js';
import { randomToken, sha256 } from './crypto.js';
import type { PrincipalCache } from './principal-cache.js';

export type TokenState = 'active' | 'revoked' | 'expired';

/** API.md "Token record" (compat): `id` and `token_id` carry the same value. */
export interface TokenRecord {
  id: number;
  token_id: number;
  name: string;
  token_prefix: string;
  scopes: string[];
  state: TokenState;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

const PREFIX_LENGTH = 12; // "udt_" + 8 characters: enough to recognise a token, useless to guess it

export class ApiTokenService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly cache: PrincipalCache,
  ) {}

  state(t: ApiToken): TokenState {
    if (t.revokedAt) return 'revoked';
    if (t.expiresAt && t.expiresAt.getTime() <= this.clock.now().getTime()) return 'expired';
    return 'active';
  }

  toRecord(t: ApiToken): TokenRecord {
    return {
      id: t.id,
      token_id: t.id,
      name: t.name,
      token_prefix: t.tokenPrefix,
      scopes: t.scopes,
      state: this.state(t),
      expires_at: t.expiresAt?.toISOString() ?? null,
      revoked_at: t.revokedAt?.toISOString() ?? null,
      last_used_at: t.lastUsedAt?.toISOString() ?? null,
      created_at: t.createdAt.toISOString(),
    };
  }

  async list(): Promise<TokenRecord[]> {
    const rows = await this.db.em().find(ApiToken, {}, { orderBy: { id: 'asc' } });
    return rows.map((t) => this.toRecord(t));
  }

  async create(input: { name: string; scopes: Scope[]; expires_at?: string | null }): Promise<TokenRecord & { token: string }> {
    const name = input.name.trim();
    if (name.length === 0) throw new ValidationError('/body/name must not be blank', [{ path: '/body/name', message: 'must not be blank' }]);
    const now = this.clock.now();
    let expiresAt: Date | null = null;
    if (input.expires_at != null) {
      expiresAt = new Date(input.expires_at);
      if (expiresAt.getTime() <= now.getTime()) {
        throw new ValidationError('/body/expires_at must be in the future', [{ path: '/body/expires_at', message: 'must be in the future' }]);
      }
    }
    const token = `udt_${randomToken(32)}`;
    const em = this.db.em();
    const entity = em.create(ApiToken, {
      name,
      tokenHash: sha256(token),
      tokenPrefix: token.slice(0, PREFIX_LENGTH),
      scopes: [...new Set(input.scopes)].sort(),
      createdAt: now,
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
    });
    await em.flush();
    return { ...this.toRecord(entity), token };
  }

  async revoke(id: number): Promise<void> {
    const em = this.db.em();
    const t = await em.findOne(ApiToken, { id });
    if (!t) throw new NotFoundError(`API token ${id} not found`);
    if (!t.revokedAt) {
      t.revokedAt = this.clock.now();
      await em.flush();
    }
    this.cache.clear();
  }

  /** Looks a token up by its hash; only active tokens pass. */
  async authenticate(tokenHash: string): Promise<{ principal: Principal; expiresAt: Date | null; lastUsedAt: Date | null }> {
    const t = await this.db.em().findOne(ApiToken, { tokenHash });
    if (!t) throw new UnauthorizedError('Unknown API token');
    const state = this.state(t);
    if (state !== 'active') throw new UnauthorizedError(`The API token is ${state}`);
    return { principal: { kind: 'token', tokenId: t.id, scopes: t.scopes as Scope[] }, expiresAt: t.expiresAt, lastUsedAt: t.lastUsedAt };
  }
}
