// Turns a bearer credential into a Principal. API key lookups are cached briefly (a revocation made in this
// process takes effect at once; one made elsewhere within KEY_CACHE_MS); the admin key is compared in constant
// time; user tokens are verified on every use, and the key that minted one must still be valid (looked up like an
// API key, cached as briefly), so revoking a key ends its users' tokens. A disabled tenant's credentials answer 403
// tenant_disabled (its state is cached like keys: at once in this process, within KEY_CACHE_MS elsewhere); an
// expired key is refused. Concurrent requests with the same uncached key share one lookup (a burst of 100 requests
// after a cold start or an expiry costs one query, not 100 queued on the pool).

import { timingSafeEqual } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { hashApiKey, looksLikeApiKey } from './api-keys';
import type { Principal } from './principal';
import type { TenantsRepository } from './tenants.repository';
import type { UserTokens } from './tokens';

const KEY_CACHE_MS = 10_000;
const KEY_CACHE_MAX = 10_000;

export class AuthService {
  private readonly keyCache = new Map<string, { principal: Principal | null; until: number }>();
  /** Lookups in flight, by key hash: later requests for the same key wait on the first one's query. */
  private readonly keyLookups = new Map<string, Promise<Principal | null>>();
  /** Bumped by every revocation: a lookup that started before it neither caches nor shares its answer. */
  private revocations = 0;
  /** Minting keys of user tokens: revoked or not, by key id. */
  private readonly mintingKeys = new Map<string, { revoked: boolean; until: number }>();
  private readonly disabledCache = new Map<string, { disabled: boolean; until: number }>();

  constructor(
    private readonly adminKey: string,
    private readonly tenants: TenantsRepository,
    readonly tokens: UserTokens,
  ) {}

  async authenticate(credential: string | undefined): Promise<Principal> {
    if (!credential) throw new CanopyException('unauthorized', 'missing credentials');
    if (constantTimeEquals(credential, this.adminKey)) return { kind: 'admin' };
    if (looksLikeApiKey(credential)) {
      const principal = await this.apiKey(credential);
      if (!principal) throw new CanopyException('unauthorized', 'invalid, expired or revoked API key');
      if (principal.kind === 'tenant') await this.checkEnabled(principal.tenantId);
      return principal;
    }
    if (credential.split('.').length === 3) {
      const claims = await this.tokens.verify(credential);
      if (claims.keyId !== null && (await this.isMintingKeyRevoked(claims.tenantId, claims.keyId))) {
        throw new CanopyException('unauthorized', 'the API key that minted this token was revoked');
      }
      await this.checkEnabled(claims.tenantId);
      return { kind: 'user', tenantId: claims.tenantId, userId: claims.userId };
    }
    throw new CanopyException('unauthorized', 'invalid credentials');
  }

  /** Forgets cached lookups of a revoked key. */
  forgetKey(keyId: string): void {
    this.revocations++;
    this.keyLookups.clear();
    this.mintingKeys.delete(keyId);
    for (const [hash, entry] of this.keyCache) {
      if (entry.principal?.kind === 'tenant' && entry.principal.keyId === keyId) this.keyCache.delete(hash);
    }
  }

  private async isMintingKeyRevoked(tenantId: string, keyId: string): Promise<boolean> {
    const cached = this.mintingKeys.get(keyId);
    if (cached && cached.until > Date.now()) return cached.revoked;
    const revoked = await this.tenants.isKeyRevoked(tenantId, keyId);
    if (this.mintingKeys.size >= KEY_CACHE_MAX) this.mintingKeys.clear();
    this.mintingKeys.set(keyId, { revoked, until: Date.now() + KEY_CACHE_MS });
    return revoked;
  }

  /** Forgets the cached state of a tenant (disabled or enabled here). */
  forgetTenant(tenantId: string): void {
    this.disabledCache.delete(tenantId);
  }

  private async checkEnabled(tenantId: string): Promise<void> {
    const cached = this.disabledCache.get(tenantId);
    let disabled = cached && cached.until > Date.now() ? cached.disabled : undefined;
    if (disabled === undefined) {
      disabled = await this.tenants.isDisabled(tenantId);
      if (this.disabledCache.size >= KEY_CACHE_MAX) this.disabledCache.clear();
      this.disabledCache.set(tenantId, { disabled, until: Date.now() + KEY_CACHE_MS });
    }
    if (disabled) throw new CanopyException('tenant_disabled', 'this tenant is disabled');
  }

  private async apiKey(key: string): Promise<Principal | null> {
    const hash = hashApiKey(key);
    const cached = this.keyCache.get(hash);
    if (cached && cached.until > Date.now()) return cached.principal;
    const inFlight = this.keyLookups.get(hash);
    if (inFlight) return inFlight;
    const lookup = this.lookUpKey(hash);
    this.keyLookups.set(hash, lookup);
    try {
      return await lookup;
    } finally {
      if (this.keyLookups.get(hash) === lookup) this.keyLookups.delete(hash);
    }
  }

  private async lookUpKey(hash: string): Promise<Principal | null> {
    const generation = this.revocations;
    const found = await this.tenants.findKeyByHash(hash);
    const usable =
      found && !found.revoked && (found.expiresAt === null || found.expiresAt.getTime() > Date.now());
    const principal: Principal | null = usable
      ? { kind: 'tenant', tenantId: found.tenantId, keyId: found.id }
      : null;
    if (generation === this.revocations) {
      if (this.keyCache.size >= KEY_CACHE_MAX) this.keyCache.clear();
      // An expiring key is cached no longer than it lives.
      const until = Math.min(Date.now() + KEY_CACHE_MS, found?.expiresAt?.getTime() ?? Infinity);
      this.keyCache.set(hash, { principal, until });
    }
    // Last use, for the key listings (at most once a minute per key; never in the way of the request).
    if (principal?.kind === 'tenant')
      void this.tenants.touchKey(principal.tenantId, principal.keyId).catch(() => undefined);
    return principal;
  }
}

function constantTimeEquals(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
