import { describeCredentialNoticesContract } from '../testing';
import { InProcessCredentialNotices } from './in-process-credential-notices';

// One process is the whole embedded deployment: both "processes" of the contract are the same instance.
describeCredentialNoticesContract('in-process', () => {
  const notices = new InProcessCredentialNotices({ onListenerError: () => {} });
  return Promise.resolve({ first: notices, second: notices, cleanup: () => notices.close() });
});

describe('InProcessCredentialNotices', () => {
  it('delivers synchronously, before publish returns', async () => {
    const notices = new InProcessCredentialNotices();
    const heard: unknown[] = [];
    await notices.subscribe((n) => heard.push(n));
    const pending = notices.publish({ type: 'tenant_disabled', tenantId: 't1' });
    expect(heard).toEqual([{ type: 'tenant_disabled', tenantId: 't1' }]);
    await pending;
  });
});
