import { AuthService } from './auth.service';
import { generateApiKey, type KeyRecord, type TenantsRepository } from '@canopy/tenancy';
import { UserTokens } from './tokens';

/** A key table in memory whose lookups stay pending until released, counting the queries made. */
class Keys {
  queries = 0;
  revoked = false;
  private pending: Array<() => void> = [];
  constructor(private readonly hash: string) {}
  readonly repository = {
    findKeyByHash: async (hash: string): Promise<KeyRecord | null> => {
      this.queries++;
      const revoked = this.revoked; // what the database said when the query ran
      await new Promise<void>((resolve) => this.pending.push(resolve));
      if (hash !== this.hash) return null;
      return { id: 'key_1', tenantId: 'ten_1', revoked, expiresAt: null };
    },
    isDisabled: () => Promise.resolve(false),
    touchKey: () => Promise.resolve(),
  } as unknown as TenantsRepository;
  /** Answers the pending queries, newest first when `newestFirst`. */
  release(newestFirst = false): void {
    const waiting = newestFirst ? this.pending.reverse() : this.pending;
    this.pending = [];
    waiting.forEach((resolve) => resolve());
  }
}

const tokens = {} as UserTokens;

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('AuthService API key lookups', () => {
  it('shares one lookup among concurrent requests with the same key, then answers from the cache', async () => {
    const { key, hash } = generateApiKey();
    const keys = new Keys(hash);
    const auth = new AuthService('admin-key-admin-key', keys.repository, tokens);
    const answers = Array.from({ length: 100 }, () => auth.authenticate(key));
    await settle();
    expect(keys.queries).toBe(1);
    keys.release();
    const principals = await Promise.all(answers);
    expect(new Set(principals.map((p) => JSON.stringify(p)))).toEqual(
      new Set([JSON.stringify({ kind: 'tenant', tenantId: 'ten_1', keyId: 'key_1' })]),
    );
    await auth.authenticate(key);
    expect(keys.queries).toBe(1);
  });

  it('does not cache or share a lookup that a revocation overtook', async () => {
    const { key, hash } = generateApiKey();
    const keys = new Keys(hash);
    const auth = new AuthService('admin-key-admin-key', keys.repository, tokens);
    const before = auth.authenticate(key); // its query reads the key before it is revoked
    await settle();
    keys.revoked = true;
    auth.forgetKey('key_1');
    // A request after the revocation makes its own query rather than waiting on the stale one.
    const after = auth.authenticate(key).catch((err: Error) => err);
    await settle();
    expect(keys.queries).toBe(2);
    keys.release(true); // the stale answer lands last: it must not overwrite the fresh one
    expect(await before).toMatchObject({ kind: 'tenant' }); // in flight before the revocation, as any request
    expect(await after).toMatchObject({ code: 'unauthorized' });
    // The stale answer was not cached: later requests are refused.
    expect(await auth.authenticate(key).catch((err: Error) => err)).toMatchObject({ code: 'unauthorized' });
  });
});

describe('AuthService tenant state', () => {
  /** A tenant whose state is read by pending queries (counted), answered when released. */
  function tenant(hash: string) {
    const state = { queries: 0, disabled: false, pending: [] as Array<() => void> };
    const repository = {
      findKeyByHash: (h: string): Promise<KeyRecord | null> =>
        Promise.resolve(
          h === hash ? { id: 'key_1', tenantId: 'ten_1', revoked: false, expiresAt: null } : null,
        ),
      isDisabled: async () => {
        state.queries++;
        const disabled = state.disabled; // what the database said when the query ran
        await new Promise<void>((resolve) => state.pending.push(resolve));
        return disabled;
      },
      touchKey: () => Promise.resolve(),
    } as unknown as TenantsRepository;
    const release = (newestFirst = false) => {
      const waiting = newestFirst ? state.pending.reverse() : state.pending;
      state.pending = [];
      waiting.forEach((resolve) => resolve());
    };
    return { state, repository, release };
  }

  it('shares one read of the tenant among a burst of requests, then answers from the cache', async () => {
    const { key, hash } = generateApiKey();
    const t = tenant(hash);
    const auth = new AuthService('admin-key-admin-key', t.repository, tokens);
    const answers = Array.from({ length: 100 }, () => auth.authenticate(key));
    await settle();
    expect(t.state.queries).toBe(1);
    t.release();
    expect((await Promise.all(answers)).every((p) => p.kind === 'tenant')).toBe(true);
    await auth.authenticate(key);
    expect(t.state.queries).toBe(1);
  });

  it('does not cache or share a read that disabling the tenant overtook', async () => {
    const { key, hash } = generateApiKey();
    const t = tenant(hash);
    const auth = new AuthService('admin-key-admin-key', t.repository, tokens);
    const before = auth.authenticate(key); // its query reads the tenant while enabled
    await settle();
    t.state.disabled = true;
    auth.forgetTenant('ten_1');
    const after = auth.authenticate(key).catch((err: Error) => err);
    await settle();
    expect(t.state.queries).toBe(2);
    t.release(true); // the stale answer lands last: it must not overwrite the fresh one
    expect(await before).toMatchObject({ kind: 'tenant' });
    expect(await after).toMatchObject({ code: 'tenant_disabled' });
    const later = auth.authenticate(key).catch((err: Error) => err);
    await settle();
    expect(t.state.queries).toBe(2); // answered from the cache: the fresh answer
    expect(await later).toMatchObject({ code: 'tenant_disabled' });
  });
});

describe('AuthService grants', () => {
  const expiresAt = new Date('2030-01-01T00:00:00Z');
  const repository = (hash: string) =>
    ({
      findKeyByHash: (h: string): Promise<KeyRecord | null> =>
        Promise.resolve(h === hash ? { id: 'key_1', tenantId: 'ten_1', revoked: false, expiresAt } : null),
      isKeyRevoked: () => Promise.resolve(false),
      isDisabled: () => Promise.resolve(false),
      touchKey: () => Promise.resolve(),
    }) as unknown as TenantsRepository;

  it('answers the key behind a credential and when it expires', async () => {
    const { key, hash } = generateApiKey();
    const userTokens = new UserTokens('a-secret-of-at-least-32-characters-long', {
      defaultSeconds: 3_600,
      maxSeconds: 86_400,
    });
    const auth = new AuthService('admin-key-admin-key', repository(hash), userTokens);

    expect(await auth.grant(key)).toEqual({
      principal: { kind: 'tenant', tenantId: 'ten_1', keyId: 'key_1' },
      keyId: 'key_1',
      expiresAt: expiresAt.getTime(),
    });
    const minted = await userTokens.mint('ten_1', 'alice', 600, 'key_1');
    expect(await auth.grant(minted.token)).toEqual({
      principal: { kind: 'user', tenantId: 'ten_1', userId: 'alice' },
      keyId: 'key_1',
      expiresAt: minted.expiresAt.getTime(),
    });
    expect(await auth.grant('admin-key-admin-key')).toEqual({
      principal: { kind: 'admin' },
      keyId: null,
      expiresAt: Infinity,
    });
  });
});
