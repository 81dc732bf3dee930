import { emptyUsage, systemScope, tenantScope } from '@canopy/core';
import type { PendingState } from '@canopy/agent';
import { actingScope } from './acting-scope';

const T = 'tenant-1';
const pending = (resumed?: PendingState['resumed']): PendingState => ({
  version: 1,
  messages: [],
  calls: [],
  reason: 'approval',
  step: 1,
  maxSteps: 5,
  segmentUsage: emptyUsage(),
  runUsage: emptyUsage(),
  ...(resumed ? { resumed } : {}),
});
const json = (p: PendingState) => p as unknown as Record<string, unknown>;

describe('actingScope', () => {
  it('is the starter’s for the first execution', () => {
    expect(actingScope(T, { pending: null, attempts: 1, actor: { type: 'key', keyId: 'k' } })).toEqual({
      scope: tenantScope(T, { keyId: 'k' }),
      callerScopes: true,
    });
    expect(
      actingScope(T, { pending: null, attempts: 1, actor: { type: 'user', userId: 'u' } }).scope,
    ).toEqual(tenantScope(T, { userId: 'u' }));
  });

  it('is the system’s for a takeover, and for a run with no recorded caller', () => {
    const system = { scope: systemScope(T), callerScopes: false };
    expect(actingScope(T, { pending: null, attempts: 2, actor: { type: 'key', keyId: 'k' } })).toEqual(
      system,
    );
    expect(actingScope(T, { pending: null, attempts: 1, actor: null })).toEqual(system);
  });

  it('is the resumer’s for the execution right after a resume, the system’s for any later one', () => {
    const resumed = json(pending({ by: { type: 'user', userId: 'approver' }, attempts: 3 }));
    const actor = { type: 'key' as const, keyId: 'k' };
    expect(actingScope(T, { pending: resumed, attempts: 4, actor })).toEqual({
      scope: tenantScope(T, { userId: 'approver' }),
      callerScopes: true,
    });
    expect(actingScope(T, { pending: resumed, attempts: 5, actor }).scope).toEqual(systemScope(T));
    expect(actingScope(T, { pending: json(pending()), attempts: 2, actor }).scope).toEqual(systemScope(T));
  });
});
