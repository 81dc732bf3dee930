import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';

import type { CredentialNotice, Unsubscribe } from '../ports';
import { describeCredentialNoticesContract, waitFor } from '../testing';
import { RedisCredentialNotices } from './redis-credential-notices';
import { deleteKeys, killPubSubConnection, testPrefix, TestConnections } from './redis-test-support';

const PREFIX = testPrefix('redis-credential-notices');
const connections = new TestConnections();
let admin: Redis;

beforeAll(() => {
  admin = connections.connect();
});

afterAll(async () => {
  await deleteKeys(admin, PREFIX);
  await connections.closeAll();
});

/** An "api process": its own connections and adapter over the shared Redis. */
function instance(prefix = PREFIX, subscriber?: Redis): RedisCredentialNotices {
  return new RedisCredentialNotices({
    redis: connections.connect(),
    ...(subscriber ? { subscriber } : {}),
    prefix,
    onListenerError: () => {},
  });
}

describeCredentialNoticesContract('redis, two processes', () => {
  const first = instance();
  const second = instance();
  return Promise.resolve({
    first,
    second,
    cleanup: async () => {
      await Promise.all([first.close(), second.close()]);
    },
  });
});

describe('RedisCredentialNotices', () => {
  const unsubscribes: Unsubscribe[] = [];
  const adapters: RedisCredentialNotices[] = [];

  function adapter(...args: Parameters<typeof instance>): RedisCredentialNotices {
    const made = instance(...args);
    adapters.push(made);
    return made;
  }

  afterEach(async () => {
    for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
    await Promise.all(adapters.splice(0).map((a) => a.close()));
  });

  it('hears only its own deployment’s notices (its prefix)', async () => {
    const mine = adapter();
    const neighbour = adapter(`${PREFIX}:neighbour`);
    const heard: CredentialNotice[] = [];
    unsubscribes.push(await mine.subscribe((n) => heard.push(n)));
    await neighbour.publish({ type: 'tenant_disabled', tenantId: 'theirs' });
    const marker: CredentialNotice = { type: 'tenant_disabled', tenantId: 'ours' };
    await mine.publish(marker);
    await waitFor('the marker', () => heard.length >= 1);
    expect(heard).toEqual([marker]);
  });

  it('ignores what is no notice on its channel', async () => {
    const mine = adapter();
    const heard: CredentialNotice[] = [];
    unsubscribes.push(await mine.subscribe((n) => heard.push(n)));
    for (const junk of [
      'not json',
      '{"type":"key_revoked","tenantId":"t"}',
      '{"type":"other","tenantId":"t"}',
    ])
      await admin.publish(`${PREFIX}:credentials`, junk);
    const marker: CredentialNotice = { type: 'key_revoked', tenantId: 't', keyId: 'k' };
    await mine.publish(marker);
    await waitFor('the marker', () => heard.length >= 1);
    expect(heard).toEqual([marker]);
  });

  it('tells its subscribers that notices may be missed once its connection is back, and hears again', async () => {
    const name = `canopy-test-credentials-subscriber-${randomUUID()}`;
    const publisher = adapter();
    const mine = adapter(PREFIX, connections.connect({ connectionName: name }));
    const heard: CredentialNotice[] = [];
    let missed = 0;
    unsubscribes.push(
      await mine.subscribe(
        (n) => heard.push(n),
        () => missed++,
      ),
    );

    await killPubSubConnection(admin, name);
    await waitFor('the missed-notices call', () => missed >= 1);
    const after: CredentialNotice = { type: 'tenant_enabled', tenantId: randomUUID() };
    await publisher.publish(after);
    await waitFor('the notice after the reconnect', () => heard.length >= 1);
    expect(heard).toEqual([after]);
  });
});
