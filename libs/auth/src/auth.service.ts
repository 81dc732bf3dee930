// Turns a bearer credential into a Principal. API key lookups are cached briefly (a revocation made in this
// process takes effect at once; one made elsewhere within KEY_CACHE_MS); the admin key is compared in constant
// time; user tokens are verified on every use, and the key that minted one must still be valid (looked up like an
// API key, cached as briefly), so revoking a key ends its users' tokens. A disabled tenant's credentials answer 403
// tenant_disabled (its state is cached like keys: at once in this process, within KEY_CACHE_MS elsewhere); an
// expired key is refused. Concurrent requests with the same uncached key, minting key or tenant share one lookup (a
// burst of 100 requests after a cold start or an expiry costs one query, not 100 queued on the pool: LookupCache).

import { timingSafeEqual } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { hashApiKey, looksLikeApiKey } from './api-keys';
import type { Principal } from './principal';
import type { TenantsRepository } from './tenants.repository';
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
    this.keys.forget((_, key) => key.principal?.kind === 'tenant' && key.principal.keyId === keyId);
    this.mintingKeys.forget((id) => id === keyId);
  }

  private isMintingKeyRevoked(tenantId: string, keyId: string): Promise<boolean> {
    return this.mintingKeys.get(keyId, () => this.tenants.isKeyRevoked(tenantId, keyId));
  }

  /** Forgets the cached state of a tenant (disabled or enabled here). */
  forgetTenant(tenantId: string): void {
    this.disabledTenants.forget((id) => id === tenantId);
  }

  private async checkEnabled(tenantId: string): Promise<void> {
    const disabled = await this.disabledTenants.get(tenantId, () => this.tenants.isDisabled(tenantId));
    if (disabled) throw new CanopyException('tenant_disabled', 'this tenant is disabled');
  }

  private async apiKey(key: string): Promise<Principal | null> {
    const hash = hashApiKey(key);
    // An expiring key is cached no longer than it lives.
    const found = await this.keys.get(
      hash,
      () => this.lookUpKey(hash),
      (key) => key.expiresAt,
    );
    return found.principal;
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
