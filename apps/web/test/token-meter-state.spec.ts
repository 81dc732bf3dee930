// The chat header's token meter in each of its states: loading, not counted yet, no window known, normal, near the
// window, over it.

import { NEAR_RATIO, tokenMeterDisplay } from '../src/token-meter-state';

const meter = (tokens: number, window: number | null, strategy: 'none' | 'truncate' = 'none') => ({
  tokens,
  window,
  strategy,
  summarizedThrough: null,
});

describe('tokenMeterDisplay', () => {
  it('says it is loading before the session is there, and that nothing is counted before a run', () => {
    expect(tokenMeterDisplay({ loading: true, context: null, lastError: null })).toMatchObject({
      state: 'loading',
      percent: null,
    });
    expect(tokenMeterDisplay({ loading: false, context: null, lastError: null })).toMatchObject({
      state: 'none',
      label: 'tokens: counted after a reply',
      strategy: null,
    });
  });

  it('shows the count alone, as an estimate, when no window is known', () => {
    expect(tokenMeterDisplay({ loading: false, context: meter(1_234, null), lastError: null })).toEqual(
      expect.objectContaining({
        state: 'unknown',
        label: '~1,234 tokens · no window known',
        percent: null,
        strategy: 'none',
      }),
    );
  });

  it('shows tokens against the window with a bar, warns past 80% and errs past the window', () => {
    expect(
      tokenMeterDisplay({ loading: false, context: meter(1_234, 8_192, 'truncate'), lastError: null }),
    ).toMatchObject({
      state: 'normal',
      label: '1,234 / 8,192 tokens',
      // A narrow screen shows the figure alone.
      figure: '1,234 / 8,192',
      percent: 15,
      strategy: 'truncate',
    });
    expect(NEAR_RATIO).toBe(0.8);
    const at = (tokens: number) =>
      tokenMeterDisplay({ loading: false, context: meter(tokens, 4_000), lastError: null }).state;
    expect([at(3_200), at(3_201), at(4_000), at(4_001)]).toEqual(['normal', 'near', 'near', 'over']);
    expect(
      tokenMeterDisplay({ loading: false, context: meter(9_000, 4_000), lastError: null }),
    ).toMatchObject({ label: '9,000 / 4,000 tokens', percent: 100 });
  });

  it('errs when the last run failed with context_length_exceeded, whatever the count (nothing of it was kept)', () => {
    for (const context of [meter(10, 4_000), meter(10, null), null]) {
      const shown = tokenMeterDisplay({ loading: false, context, lastError: 'context_length_exceeded' });
      expect(shown.state).toBe('over');
      expect(shown.title).toMatch(/context_length_exceeded/);
    }
    // Another failure says nothing about the window.
    expect(
      tokenMeterDisplay({ loading: false, context: meter(10, 4_000), lastError: 'provider_error' }).state,
    ).toBe('normal');
  });
});
