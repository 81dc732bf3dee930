// Turns a bearer credential into a Principal, or a Grant (the principal, the key behind it, its expiry) for a
// connection that outlives the request. API key lookups are cached for KEY_CACHE_MS; a revocation forgets them at
// once (the api tells every process of the deployment: CredentialWatch, which also re-checks its open connections
// through these caches). The admin key is compared in constant time; user tokens are verified on every use, and the
// key that minted one must still be valid (looked up like an API key, cached as briefly), so revoking a key ends its
// users' tokens. A disabled tenant's credentials answer 403 tenant_disabled (its state is cached like keys, and
// forgotten the same way); an expired key is refused. Concurrent requests with the same uncached key, minting key or
// tenant share one lookup (a burst of 100 requests after a cold start or an expiry costs one query, not 100 queued
// on the pool: LookupCache).

import { timingSafeEqual } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { hashApiKey, looksLikeApiKey, type TenantsRepository } from '@canopy/tenancy';
import type { Grant, Principal } from './principal';
import type { UserTokens } from './tokens';
import { LookupCache } from './lookup-cache';

const KEY_CACHE_MS = 10_000;
const KEY_CACHE_MAX = 10_000;

export class AuthService {
  /** API keys' lookups by key hash. */
  private readonly keys = new LookupCache<string, KeyLookup>(KEY_CACHE_MS, KEY_CACHE_MAX);
  /** Minting keys of user tokens: revoked or not, by key id. */
  private readonly mintingKeys = new LookupCache<string, boolean>(KEY_CACHE_MS, KEY_CACHE_MAX);
  /** Tenants: disabled or not, by tenant id. */
  private readonly disabledTenants = new LookupCache<string, boolean>(KEY_CACHE_MS, KEY_CACHE_MAX);

  constructor(
    private readonly adminKey: string,
    private readonly tenants: TenantsRepository,
    readonly tokens: UserTokens,
  ) {}

  async authenticate(credential: string | undefined): Promise<Principal> {
    return (await this.grant(credential)).principal;
  }

  /** Authenticates a credential, answering what it grants: who, the key behind it and until when. */
  async grant(credential: string | undefined): Promise<Grant> {
    if (!credential) throw new CanopyException('unauthorized', 'missing credentials');
    if (constantTimeEquals(credential, this.adminKey))
      return { principal: { kind: 'admin' }, keyId: null, expiresAt: Infinity };
    if (looksLikeApiKey(credential)) {
      const { principal, expiresAt } = await this.apiKey(credential);
      if (principal?.kind !== 'tenant')
        throw new CanopyException('unauthorized', 'invalid, expired or revoked API key');
      await this.checkEnabled(principal.tenantId);
      return { principal, keyId: principal.keyId, expiresAt };
    }
    if (credential.split('.').length === 3) {
      const claims = await this.tokens.verify(credential);
      if (claims.keyId !== null && (await this.isKeyRevoked(claims.tenantId, claims.keyId))) {
        throw new CanopyException('unauthorized', 'the API key that minted this token was revoked');
      }
      await this.checkEnabled(claims.tenantId);
      return {
        principal: { kind: 'user', tenantId: claims.tenantId, userId: claims.userId },
        keyId: claims.keyId,
        expiresAt: claims.expiresAt.getTime(),
      };
    }
    throw new CanopyException('unauthorized', 'invalid credentials');
  }

  /** Forgets cached lookups of a revoked key. */
  forgetKey(keyId: string): void {
    this.keys.forget((_, key) => key.principal?.kind === 'tenant' && key.principal.keyId === keyId);
    this.mintingKeys.forget((id) => id === keyId);
  }

  /** Whether a tenant's key is revoked (or gone), cached like every lookup here. */
  isKeyRevoked(tenantId: string, keyId: string): Promise<boolean> {
    return this.mintingKeys.get(keyId, () => this.tenants.isKeyRevoked(tenantId, keyId));
  }

  /** Forgets the cached state of a tenant (disabled or enabled here). */
  forgetTenant(tenantId: string): void {
    this.disabledTenants.forget((id) => id === tenantId);
  }

  /** Forgets every cached lookup (revocations may have been missed). */
  forgetAll(): void {
    this.keys.forget();
    this.mintingKeys.forget();
    this.disabledTenants.forget();
  }

  /** Whether a tenant is disabled, cached like every lookup here. */
  isTenantDisabled(tenantId: string): Promise<boolean> {
    return this.disabledTenants.get(tenantId, () => this.tenants.isDisabled(tenantId));
  }

  private async checkEnabled(tenantId: string): Promise<void> {
    if (await this.isTenantDisabled(tenantId))
      throw new CanopyException('tenant_disabled', 'this tenant is disabled');
  }

  private apiKey(key: string): Promise<KeyLookup> {
    const hash = hashApiKey(key);
    // An expiring key is cached no longer than it lives.
    return this.keys.get(
      hash,
      () => this.lookUpKey(hash),
      (key) => key.expiresAt,
    );
  }

  private async lookUpKey(hash: string): Promise<KeyLookup> {
    const found = await this.tenants.findKeyByHash(hash);
    const usable =
      found && !found.revoked && (found.expiresAt === null || found.expiresAt.getTime() > Date.now());
    const principal: Principal | null = usable
      ? { kind: 'tenant', tenantId: found.tenantId, keyId: found.id }
      : null;
    // Last use, for the key listings (at most once a minute per key; never in the way of the request).
    if (principal?.kind === 'tenant')
      void this.tenants.touchKey(principal.tenantId, principal.keyId).catch(() => undefined);
    return { principal, expiresAt: found?.expiresAt?.getTime() ?? Infinity };
  }
}

/** An API key's lookup: who it authenticates (null: nobody) and when it expires (ms; Infinity: never). */
interface KeyLookup {
  principal: Principal | null;
  expiresAt: number;
}

function constantTimeEquals(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
