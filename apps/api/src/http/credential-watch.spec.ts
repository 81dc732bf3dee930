import type { AuthService, Grant } from '@canopy/auth';
import { InProcessCredentialNotices, type CredentialNotices } from '@canopy/realtime';
import { CredentialWatch, type CutReason } from './credential-watch';

/** The cached lookups CredentialWatch uses, answered from plain sets; what it forgot is recorded. */
class FakeAuth {
  readonly revoked = new Set<string>();
  readonly disabled = new Set<string>();
  readonly forgotten: string[] = [];
  forgetKey(keyId: string) {
    this.forgotten.push(`key:${keyId}`);
  }
  forgetTenant(tenantId: string) {
    this.forgotten.push(`tenant:${tenantId}`);
  }
  forgetAll() {
    this.forgotten.push('all');
  }
  isKeyRevoked(_tenantId: string, keyId: string) {
    return Promise.resolve(this.revoked.has(keyId));
  }
  isTenantDisabled(tenantId: string) {
    return Promise.resolve(this.disabled.has(tenantId));
  }
}

const keyGrant = (tenantId: string, keyId: string, expiresAt = Infinity): Grant => ({
  principal: { kind: 'tenant', tenantId, keyId },
  keyId,
  expiresAt,
});
const userGrant = (tenantId: string, keyId: string | null, expiresAt = Infinity): Grant => ({
  principal: { kind: 'user', tenantId, userId: 'u1' },
  keyId,
  expiresAt,
});
const adminGrant: Grant = { principal: { kind: 'admin' }, keyId: null, expiresAt: Infinity };

function setUp(notices: CredentialNotices = new InProcessCredentialNotices()) {
  const auth = new FakeAuth();
  const watch = new CredentialWatch(auth as unknown as AuthService, notices);
  const cuts: Array<[string, CutReason]> = [];
  const open = (name: string, grant: Grant) =>
    watch.watch(grant, (reason) => {
      cuts.push([name, reason]);
    });
  return { auth, notices, watch, cuts, open };
}

afterEach(() => {
  jest.useRealTimers();
});

describe('CredentialWatch', () => {
  it('cuts the connections of a revoked key and of the user tokens it minted, and no others', async () => {
    const { auth, watch, cuts, open } = setUp();
    const key = open('key', keyGrant('t1', 'k1'));
    open('token', userGrant('t1', 'k1'));
    open('other key', keyGrant('t1', 'k2'));
    open('other tenant', keyGrant('t2', 'k1'));
    open('admin', adminGrant);

    await watch.keyRevoked('t1', 'k1');

    expect(cuts).toEqual([
      ['key', 'unauthorized'],
      ['token', 'unauthorized'],
    ]);
    expect(key.refusal).toEqual({ code: 'unauthorized', message: expect.stringContaining('revoked') });
    expect(auth.forgotten).toContain('key:k1');
    expect(watch.size).toBe(2); // the cut ones are no longer watched
  });

  it('cuts every connection of a disabled tenant with tenant_disabled; enabling only forgets the cache', async () => {
    const { auth, watch, cuts, open } = setUp();
    open('key', keyGrant('t1', 'k1'));
    open('token', userGrant('t1', null));
    open('other tenant', keyGrant('t2', 'k2'));

    await watch.tenantChanged('t1', false);
    expect(cuts).toEqual([]);
    await watch.tenantChanged('t1', true);

    expect(cuts).toEqual([
      ['key', 'tenant_disabled'],
      ['token', 'tenant_disabled'],
    ]);
    expect(auth.forgotten.filter((f) => f === 'tenant:t1')).toHaveLength(2);
  });

  it('acts on notices published by other processes', async () => {
    const { notices, watch, cuts, open } = setUp();
    watch.onModuleInit();
    await new Promise((r) => setImmediate(r)); // the subscription is made asynchronously
    open('key', keyGrant('t1', 'k1'));
    await notices.publish({ type: 'key_revoked', tenantId: 't1', keyId: 'k1' });
    expect(cuts).toEqual([['key', 'unauthorized']]);
    await watch.onApplicationShutdown();
  });

  it('cuts a connection when its credential expires, and refuses its frames from then on', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const { cuts, open } = setUp();
    const watched = open('token', userGrant('t1', 'k1', 1_000_000 + 5_000));
    expect(watched.refusal).toBeNull();

    jest.advanceTimersByTime(4_999);
    expect(cuts).toEqual([]);
    expect(watched.refusal).toBeNull();
    jest.advanceTimersByTime(1);
    expect(watched.refusal).toEqual({ code: 'unauthorized', message: expect.stringContaining('expired') });
    jest.advanceTimersByTime(1);
    expect(cuts).toEqual([['token', 'unauthorized']]);
  });

  it('waits for an expiry beyond the longest timer in steps', () => {
    const now = 1_000_000;
    jest.useFakeTimers({ now });
    const { cuts, open } = setUp();
    const days40 = 40 * 24 * 3_600_000; // past 2^31 - 1 ms
    open('key', keyGrant('t1', 'k1', now + days40));
    jest.advanceTimersByTime(days40 - 1);
    expect(cuts).toEqual([]);
    jest.advanceTimersByTime(2);
    expect(cuts).toEqual([['key', 'unauthorized']]);
  });

  it('stops watching a closed connection', async () => {
    const { watch, cuts, open } = setUp();
    open('key', keyGrant('t1', 'k1')).stop();
    await watch.keyRevoked('t1', 'k1');
    expect(cuts).toEqual([]);
    expect(watch.size).toBe(0);
  });

  it('when notices may have been missed, forgets every cached lookup and checks every connection again', async () => {
    let missed: (() => void) | undefined;
    const { auth, watch, cuts, open } = setUp({
      publish: () => Promise.resolve(),
      subscribe: (_listener, onMissed) => {
        missed = onMissed;
        return Promise.resolve(() => Promise.resolve());
      },
      close: () => Promise.resolve(),
    });
    watch.onModuleInit();
    await new Promise((r) => setImmediate(r));
    open('revoked key', keyGrant('t1', 'k1'));
    open('valid key', keyGrant('t1', 'k2'));
    open('disabled tenant', keyGrant('t2', 'k3'));
    auth.revoked.add('k1');
    auth.disabled.add('t2');

    missed!();
    await new Promise((r) => setImmediate(r));

    expect(auth.forgotten).toEqual(['all']);
    expect(cuts).toEqual([
      ['revoked key', 'unauthorized'],
      ['disabled tenant', 'tenant_disabled'],
    ]);
    await watch.onApplicationShutdown();
  });
});
