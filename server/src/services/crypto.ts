import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Random tokens, hashing and the credential cipher (DESIGN.md section 8). */

export function randomToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}

/** SHA-256 hex of a high-entropy value (session tokens, API tokens, setup and reset codes). */
export function sha256(value: string): string {
  return crypto.createHash('sha256').update(value, 'utf8').digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

// scrypt parameters: N=2^15 costs ~50 ms and 32 MiB, a reasonable price for one admin login.
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const key = await scrypt(password, salt, 32);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return crypto.timingSafeEqual(key, expected);
}

function scrypt(password: string, salt: Buffer, len: number, opts: crypto.ScryptOptions = SCRYPT): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    crypto.scrypt(password.normalize('NFKC'), salt, len, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** A human-typable one-time code (setup, reset): 20 base32 characters = 100 bits, in groups of 5. */
export function oneTimeCode(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = crypto.randomBytes(20);
  const chars = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
  return chars.match(/.{5}/g)!.join('-');
}

/** Codes are compared without their separators and case, so a retyped code still matches. */
export function normalizeCode(code: string): string {
  return code.replace(/[\s-]/g, '').toUpperCase();
}

export class EncryptionKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EncryptionKeyError';
  }
}

/** Parses ENCRYPTION_KEY: 32 bytes as base64/base64url (43-44 chars) or hex (64 chars). */
export function parseKey(value: string, source: string): Buffer {
  const v = value.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(v)) key = Buffer.from(v, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(v)) key = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (!key || key.length !== 32) {
    throw new EncryptionKeyError(`${source} must be 32 bytes, as 64 hex characters or 44 base64 characters`);
  }
  return key;
}

export interface KeySource {
  key: Buffer;
  /** Where it came from, for the startup log (never the key itself). */
  origin: 'env' | 'file' | 'generated';
  file: string;
}

/**
 * Resolves the credential key: ENCRYPTION_KEY, else DATA_DIR/secret.key, else (only when nothing
 * is encrypted yet) a newly generated key file with mode 0600.
 */
export function resolveEncryptionKey(envKey: string | null, dataDir: string, hasEncryptedData: boolean): KeySource {
  const file = path.join(dataDir, 'secret.key');
  if (envKey) return { key: parseKey(envKey, 'ENCRYPTION_KEY'), origin: 'env', file };
  if (fs.existsSync(file)) return { key: parseKey(fs.readFileSync(file, 'utf8'), file), origin: 'file', file };
  if (hasEncryptedData) {
    throw new EncryptionKeyError(
      `Stored credentials are encrypted, but neither ENCRYPTION_KEY nor ${file} is present. ` +
        'Restore the key (set ENCRYPTION_KEY or put the key file back); starting without it would lose every credential.',
    );
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = crypto.randomBytes(32);
  fs.writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return { key, origin: 'generated', file };
}

/** AES-256-GCM with a random 96-bit IV per value; the format is `v1.<iv>.<tag>.<ciphertext>` (base64url). */
export class CredentialCipher {
  constructor(private readonly key: Buffer) {}

  encrypt(plaintext: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  decrypt(value: string): string {
    const [version, iv, tag, ct] = value.split('.');
    if (version !== 'v1' || !iv || !tag || ct === undefined) throw new EncryptionKeyError('Unknown ciphertext format');
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new EncryptionKeyError('The value was encrypted with a different key');
    }
  }

  encryptJson(value: unknown): string {
    return this.encrypt(JSON.stringify(value));
  }

  decryptJson<T = Record<string, unknown>>(value: string): T {
    return JSON.parse(this.decrypt(value)) as T;
  }
}
