import type { Logger } from 'pino';
import {
  ConflictError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidationError,
  type Clock,
} from '@usage-monitor/core';
import type { Database } from '../persistence/orm.js';
import { AdminCredential, AdminSession, ApiToken } from '../persistence/entities/index.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Settings } from '../config/settings.js';
import type { Principal } from '../http/auth.js';
import type { ApiTokenService } from './api-tokens.js';
import { hashPassword, normalizeCode, oneTimeCode, randomToken, sha256, verifyPassword } from './crypto.js';

export interface SessionResponse {
  access_token: string;
  token_type: 'bearer';
  expires_at: string;
}

const ADMIN_ID = 1;
/** Session last-use timestamps are written at most this often, so reads stay reads. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The one admin: setup and reset codes, password, sessions, login throttling (DESIGN.md section 8). */
export class AdminAuthService {
  private readonly failures = new Map<string, { count: number; firstAt: number }>();

  constructor(
    private readonly db: Database,
    private readonly settings: Settings,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly apiTokens: ApiTokenService,
    private readonly cache: PrincipalCache,
  ) {}

  private async credential(em = this.db.em()): Promise<AdminCredential> {
    const found = await em.findOne(AdminCredential, { id: ADMIN_ID });
    if (found) return found;
    const created = em.create(AdminCredential, {
      id: ADMIN_ID,
      passwordHash: null,
      setupCodeHash: null,
      setupCodeExpiresAt: null,
      resetCodeHash: null,
      resetCodeExpiresAt: null,
      updatedAt: this.clock.now(),
    });
    await em.flush();
    return created;
  }

  async status(): Promise<{ is_configured: boolean; setup_required: boolean }> {
    const cred = await this.db.em().findOne(AdminCredential, { id: ADMIN_ID });
    const configured = Boolean(cred?.passwordHash);
    return { is_configured: configured, setup_required: !configured };
  }

  /**
   * At each start while no password is set, a fresh one-time setup code is stored (hashed) and
   * written to the log: the log is the channel through which the operator receives it.
   */
  async issueSetupCodeIfNeeded(): Promise<string | null> {
    const em = this.db.em();
    const cred = await this.credential(em);
    if (cred.passwordHash) return null;
    const code = oneTimeCode();
    cred.setupCodeHash = sha256(normalizeCode(code));
    cred.setupCodeExpiresAt = this.expiry();
    cred.updatedAt = this.clock.now();
    await em.flush();
    this.logger.warn(
      { setupCodeExpiresAt: cred.setupCodeExpiresAt.toISOString() },
      `No admin password is set. One-time setup code: ${code} (POST /api/v1/auth/setup with this code and a password; it expires in ${this.settings.adminRecoveryCodeExpireMinutes} minutes)`,
    );
    return code;
  }

  async setup(code: string, password: string): Promise<SessionResponse> {
    const em = this.db.em();
    const cred = await this.credential(em);
    if (cred.passwordHash) throw new ConflictError('The admin password is already set; log in or use a reset');
    this.checkCode(cred.setupCodeHash, cred.setupCodeExpiresAt, code, 'setup');
    cred.passwordHash = await hashPassword(password);
    cred.setupCodeHash = null;
    cred.setupCodeExpiresAt = null;
    cred.updatedAt = this.clock.now();
    await em.flush();
    this.logger.info('admin password set up');
    return this.createSession(em);
  }

  async login(password: string, clientKey: string): Promise<SessionResponse> {
    this.checkThrottle(clientKey);
    const em = this.db.em();
    const cred = await em.findOne(AdminCredential, { id: ADMIN_ID });
    if (!cred?.passwordHash) {
      throw new ConflictError('No admin password is set yet; complete the setup first');
    }
    if (!(await verifyPassword(password, cred.passwordHash))) {
      this.recordFailure(clientKey);
      this.logger.warn({ client: clientKey }, 'admin login failed');
      throw new UnauthorizedError('Wrong password');
    }
    this.failures.delete(clientKey);
    return this.createSession(em);
  }

  async logout(sessionId: number): Promise<void> {
    const em = this.db.em();
    await em.nativeUpdate(AdminSession, { id: sessionId, revokedAt: null }, { revokedAt: this.clock.now() });
    this.cache.clear();
  }

  async requestReset(): Promise<void> {
    const em = this.db.em();
    const cred = await this.credential(em);
    const code = oneTimeCode();
    cred.resetCodeHash = sha256(normalizeCode(code));
    cred.resetCodeExpiresAt = this.expiry();
    cred.updatedAt = this.clock.now();
    await em.flush();
    this.logger.warn(
      { resetCodeExpiresAt: cred.resetCodeExpiresAt.toISOString() },
      `Admin password reset requested. One-time reset code: ${code} (POST /api/v1/auth/reset/complete; it expires in ${this.settings.adminRecoveryCodeExpireMinutes} minutes)`,
    );
  }

  async completeReset(code: string, password: string): Promise<SessionResponse> {
    const em = this.db.em();
    const cred = await this.credential(em);
    this.checkCode(cred.resetCodeHash, cred.resetCodeExpiresAt, code, 'reset');
    const now = this.clock.now();
    await em.transactional(async (tx) => {
      const c = await tx.findOneOrFail(AdminCredential, { id: ADMIN_ID });
      c.passwordHash = await hashPassword(password);
      c.resetCodeHash = null;
      c.resetCodeExpiresAt = null;
      c.setupCodeHash = null;
      c.setupCodeExpiresAt = null;
      c.updatedAt = now;
      await tx.nativeUpdate(AdminSession, { revokedAt: null }, { revokedAt: now });
    });
    this.cache.clear();
    this.logger.warn('admin password reset; every earlier session was revoked');
    return this.createSession(this.db.em());
  }

  /** Resolves a bearer token to who is calling; unknown, revoked and expired tokens are 401. */
  async principalForToken(token: string): Promise<Principal> {
    const hash = sha256(token);
    const now = this.clock.now();
    const hit = this.cache.get(hash, now.getTime());
    if (hit) {
      if (now.getTime() - hit.lastUsedWrittenMs > LAST_USED_RESOLUTION_MS) {
        hit.lastUsedWrittenMs = now.getTime();
        await this.touch(hit.principal, now);
      }
      return hit.principal;
    }
    const found = token.startsWith('udt_') ? await this.apiTokens.authenticate(hash) : await this.authenticateSession(hash);
    if (!found.lastUsedAt || now.getTime() - found.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.touch(found.principal, now);
    }
    this.cache.set(hash, found.principal, found.expiresAt?.getTime() ?? null, (found.lastUsedAt ?? now).getTime());
    return found.principal;
  }

  private async authenticateSession(tokenHash: string) {
    const session = await this.db.em().findOne(AdminSession, { tokenHash });
    if (!session) throw new UnauthorizedError('Unknown session token');
    if (session.revokedAt) throw new UnauthorizedError('The session was revoked');
    if (session.expiresAt.getTime() <= this.clock.now().getTime()) throw new UnauthorizedError('The session has expired');
    const principal: Principal = { kind: 'admin', sessionId: session.id };
    return { principal, expiresAt: session.expiresAt, lastUsedAt: session.lastUsedAt };
  }

  /** Records last use, at most once a minute per token, so authenticated reads stay reads. */
  private async touch(principal: Principal, now: Date): Promise<void> {
    const em = this.db.em();
    if (principal.kind === 'admin') await em.nativeUpdate(AdminSession, { id: principal.sessionId }, { lastUsedAt: now });
    else if (principal.kind === 'token') await em.nativeUpdate(ApiToken, { id: principal.tokenId }, { lastUsedAt: now });
  }

  private async createSession(em = this.db.em()): Promise<SessionResponse> {
    const token = randomToken(32);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.settings.adminSessionExpireHours * 3600_000);
    em.create(AdminSession, { tokenHash: sha256(token), createdAt: now, expiresAt, revokedAt: null, lastUsedAt: null });
    await em.flush();
    return { access_token: token, token_type: 'bearer', expires_at: expiresAt.toISOString() };
  }

  private expiry(): Date {
    return new Date(this.clock.now().getTime() + this.settings.adminRecoveryCodeExpireMinutes * 60_000);
  }

  private checkCode(hash: string | null, expiresAt: Date | null, code: string, kind: 'setup' | 'reset'): void {
    const valid = hash !== null && hash === sha256(normalizeCode(code));
    if (!valid) {
      throw new ValidationError(`The ${kind} code is not valid`, [{ path: '/body/code', message: 'is not valid' }]);
    }
    if (!expiresAt || expiresAt.getTime() <= this.clock.now().getTime()) {
      const hint = kind === 'setup' ? 'restart the server for a new one' : 'request a new one';
      throw new ValidationError(`The ${kind} code has expired; ${hint}`, [{ path: '/body/code', message: 'has expired' }]);
    }
  }

  private checkThrottle(key: string): void {
    const now = this.clock.now().getTime();
    const windowMs = this.settings.loginWindowSeconds * 1000;
    const entry = this.failures.get(key);
    if (!entry) return;
    if (now - entry.firstAt >= windowMs) {
      this.failures.delete(key);
      return;
    }
    if (entry.count >= this.settings.loginMaxAttempts) {
      const retryAfter = Math.max(1, Math.ceil((entry.firstAt + windowMs - now) / 1000));
      throw new TooManyRequestsError(`Too many failed logins; try again in ${retryAfter} seconds`, retryAfter);
    }
  }

  private recordFailure(key: string): void {
    const now = this.clock.now().getTime();
    const entry = this.failures.get(key);
    if (!entry || now - entry.firstAt >= this.settings.loginWindowSeconds * 1000) {
      this.failures.set(key, { count: 1, firstAt: now });
    } else {
      entry.count += 1;
    }
    // Bound memory under a spray of addresses.
    if (this.failures.size > 10_000) this.failures.delete(this.failures.keys().next().value!);
  }
}
