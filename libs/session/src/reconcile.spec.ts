import { reconcile, type PersistedState } from './reconcile';

const persisted: PersistedState = {
  model: 'anthropic:old',
  system: 'persisted system',
  opts: { temperature: 0.1 },
  tools: [{ name: 'ask', description: 'ask', inputSchema: {} }],
  title: 'Persisted title',
};

describe('reconcile (load-mode resolution)', () => {
  it('keeps the persisted model when it is usable, even when a start model is given', () => {
    expect(reconcile(persisted, { model: 'mock:echo' }, () => true).model).toBe('anthropic:old');
  });

  it('falls back to the start model when the persisted one is unusable', () => {
    expect(reconcile(persisted, { model: 'mock:echo' }, (m) => m === 'mock:echo').model).toBe('mock:echo');
  });

  it('fails when neither model is usable', () => {
    expect(() => reconcile(persisted, { model: 'nope:x' }, () => false)).toThrow(/no usable model/);
    expect(() => reconcile(persisted, {}, () => false)).toThrow(/no usable model/);
  });

  it('lets start options win for system, opts and tools, and falls back to persisted ones', () => {
    const started = reconcile(persisted, { system: null, opts: { temperature: 1 }, tools: [] }, () => true);
    expect(started).toMatchObject({ system: null, opts: { temperature: 1 }, tools: [] });
    expect(reconcile(persisted, {}, () => true)).toEqual(persisted);
  });

  it('ignores a start title: the persisted one wins', () => {
    expect(reconcile(persisted, { title: 'New' }, () => true).title).toBe('Persisted title');
  });
});
