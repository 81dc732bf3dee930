import { systemScope, tenantScope } from './scope';

describe('tenantScope', () => {
  it('builds a frozen, non-system scope for a tenant', () => {
    const scope = tenantScope('t_1');
    expect(scope).toEqual({ tenantId: 't_1', roles: [], system: false });
    expect('userId' in scope).toBe(false);
    expect(Object.isFrozen(scope)).toBe(true);
    expect(Object.isFrozen(scope.roles)).toBe(true);
  });

  it('carries the user id and a copy of the roles', () => {
    const roles = ['admin'];
    const scope = tenantScope('t_1', { userId: 'u_1', roles });
    expect(scope).toEqual({ tenantId: 't_1', userId: 'u_1', roles: ['admin'], system: false });
    roles.push('owner');
    expect(scope.roles).toEqual(['admin']);
    expect(() => (scope.roles as string[]).push('x')).toThrow(TypeError);
    expect(() => {
      (scope as { tenantId: string }).tenantId = 'other';
    }).toThrow(TypeError);
  });

  it('throws for an empty tenant id', () => {
    expect(() => tenantScope('')).toThrow('a scope needs a tenant id');
  });
});

describe('systemScope', () => {
  it('builds a frozen system scope with no user', () => {
    const scope = systemScope('t_2');
    expect(scope).toEqual({ tenantId: 't_2', roles: ['system'], system: true });
    expect('userId' in scope).toBe(false);
    expect(Object.isFrozen(scope)).toBe(true);
    expect(Object.isFrozen(scope.roles)).toBe(true);
  });

  it('throws for an empty tenant id', () => {
    expect(() => systemScope('')).toThrow('a scope needs a tenant id');
  });
});
