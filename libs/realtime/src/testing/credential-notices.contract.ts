// The CredentialNotices contract as a jest suite, run unchanged against every adapter: every subscriber hears every
// notice published after its subscription resolved, in publish order, until it unsubscribes; a throwing listener
// keeps neither the others nor the publisher from their notices.

import type { CredentialNotice, CredentialNotices, Unsubscribe } from '../ports';
import { jestApi } from './jest-api';
import { uniqueId, waitFor } from './wait';

export interface CredentialNoticesFixture {
  /** Two processes of one deployment (the same instance for an adapter that serves a single process). */
  first: CredentialNotices;
  second: CredentialNotices;
  cleanup(): Promise<void>;
}

export function describeCredentialNoticesContract(
  name: string,
  make: () => Promise<CredentialNoticesFixture>,
): void {
  const { describe, it, expect, beforeEach, afterEach } = jestApi();

  describe(`CredentialNotices contract: ${name}`, () => {
    let fixture: CredentialNoticesFixture;
    let tenant: string;
    const unsubscribes: Unsubscribe[] = [];

    async function record(notices: CredentialNotices) {
      const heard: CredentialNotice[] = [];
      const unsubscribe = await notices.subscribe((notice) => heard.push(notice));
      unsubscribes.push(unsubscribe);
      return { heard, unsubscribe };
    }

    /** Only this test's notices: other suites may share an adapter's channel. */
    const ours = (notices: CredentialNotice[]) => notices.filter((n) => n.tenantId === tenant);

    beforeEach(async () => {
      fixture = await make();
      tenant = uniqueId('tenant');
    });

    afterEach(async () => {
      for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
      await fixture.cleanup();
    });

    it('delivers every notice, in publish order, to the subscribers of every process, the publisher’s too', async () => {
      const mine = await record(fixture.first);
      const theirs = await record(fixture.second);
      const notices: CredentialNotice[] = [
        { type: 'key_revoked', tenantId: tenant, keyId: 'key-1' },
        { type: 'tenant_disabled', tenantId: tenant },
        { type: 'tenant_enabled', tenantId: tenant },
      ];
      for (const notice of notices) await fixture.first.publish(notice);

      await waitFor('every notice', () => ours(mine.heard).length >= 3 && ours(theirs.heard).length >= 3);
      expect(ours(mine.heard)).toEqual(notices);
      expect(ours(theirs.heard)).toEqual(notices);
    });

    it('delivers only notices published after subscribe resolved, and none after unsubscribe resolved', async () => {
      const witness = await record(fixture.second);
      const early: CredentialNotice = { type: 'tenant_disabled', tenantId: tenant };
      await fixture.first.publish(early);
      await waitFor('the early notice', () => ours(witness.heard).length >= 1);

      const late = await record(fixture.second);
      const leaving = await record(fixture.second);
      const second: CredentialNotice = { type: 'key_revoked', tenantId: tenant, keyId: 'key-2' };
      await fixture.first.publish(second);
      await waitFor(
        'the second notice',
        () => ours(late.heard).length >= 1 && ours(leaving.heard).length >= 1,
      );

      await leaving.unsubscribe();
      const third: CredentialNotice = { type: 'tenant_enabled', tenantId: tenant };
      await fixture.first.publish(third);
      await waitFor('the third notice', () => ours(late.heard).length >= 2);

      expect(ours(witness.heard)).toEqual([early, second, third]);
      expect(ours(late.heard)).toEqual([second, third]);
      expect(ours(leaving.heard)).toEqual([second]);
    });

    it('keeps delivering to the others and the publisher when a listener throws', async () => {
      unsubscribes.push(
        await fixture.second.subscribe(() => {
          throw new Error('listener failure (expected by the test)');
        }),
      );
      const healthy = await record(fixture.second);
      const notice: CredentialNotice = { type: 'tenant_disabled', tenantId: tenant };
      await expect(fixture.first.publish(notice)).resolves.toBeUndefined();
      await waitFor('the healthy listener', () => ours(healthy.heard).length >= 1);
      expect(ours(healthy.heard)).toEqual([notice]);
    });
  });
}
