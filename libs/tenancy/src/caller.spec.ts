import { CanopyException } from '@canopy/common';
import { tenantReadBy } from './caller';

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof CanopyException) return err.code;
    throw err;
  }
  return 'none';
};

describe('tenantReadBy', () => {
  it('lets the admin read one tenant or every tenant (null)', () => {
    expect(tenantReadBy({ kind: 'admin' }, 't1')).toBe('t1');
    expect(tenantReadBy({ kind: 'admin' }, undefined)).toBeNull();
  });

  it('lets a tenant key read its own tenant only, named or not', () => {
    expect(tenantReadBy({ kind: 'tenant', tenantId: 't1' }, undefined)).toBe('t1');
    expect(tenantReadBy({ kind: 'tenant', tenantId: 't1' }, 't1')).toBe('t1');
    expect(codeOf(() => tenantReadBy({ kind: 'tenant', tenantId: 't1' }, 't2'))).toBe('bad_request');
  });

  it('refuses a user token', () => {
    expect(codeOf(() => tenantReadBy({ kind: 'user', tenantId: 't1' }, undefined))).toBe('forbidden');
  });
});
