// What the chat header's token meter says: the tokens the next run would send against the model's window (the
// session's `context`, kept current by `context` events), and how close that is to the limit.

import type { ContextMeter } from '@canopy/client';

/**
 * `loading`: the session is not there yet; `none`: no run was counted yet; `unknown`: no window is known for the
 * model; `normal`; `near`: past NEAR_RATIO of the window; `over`: past the window, or the last run failed for it.
 */
export type TokenMeterState = 'loading' | 'none' | 'unknown' | 'normal' | 'near' | 'over';

/** The share of the window past which the meter warns. */
export const NEAR_RATIO = 0.8;

export interface TokenMeterDisplay {
  state: TokenMeterState;
  /** "1,234 / 8,192 tokens", "~1,234 tokens · no window known", ...: `figure` then `unit`. */
  label: string;
  /** "1,234 / 8,192": what a narrow screen shows of the label. */
  figure: string;
  unit: string;
  /** Of the window, 0–100 (capped) for the bar; null when there is no bar to draw. */
  percent: number | null;
  strategy: ContextMeter['strategy'] | null;
  /** The longer explanation (a tooltip). */
  title: string;
}

const count = new Intl.NumberFormat('en-US');

function labelled(figure: string, unit: string): Pick<TokenMeterDisplay, 'label' | 'figure' | 'unit'> {
  return { label: figure + unit, figure, unit };
}

export function tokenMeterDisplay(input: {
  /** The session's state has not arrived. */
  loading: boolean;
  context: ContextMeter | null | undefined;
  /** The code of the last run's error, if it failed. */
  lastError: string | null | undefined;
}): TokenMeterDisplay {
  const { context } = input;
  const failedForSize = input.lastError === 'context_length_exceeded';
  if (input.loading) {
    return {
      state: 'loading',
      ...labelled('tokens …', ''),
      percent: null,
      strategy: null,
      title: 'Loading the session',
    };
  }
  if (!context) {
    return {
      state: failedForSize ? 'over' : 'none',
      ...labelled(failedForSize ? 'over the window' : 'tokens: counted after a reply', ''),
      percent: null,
      strategy: null,
      title: failedForSize
        ? 'The last run did not fit the model’s context window (context_length_exceeded)'
        : 'What the next run sends is counted once a run has ended',
    };
  }
  const tokens = count.format(context.tokens);
  if (context.window === null) {
    return {
      state: failedForSize ? 'over' : 'unknown',
      // Without a window the service estimates (four characters a token): said with a "~".
      ...labelled(`~${tokens}`, ' tokens · no window known'),
      percent: null,
      strategy: context.strategy,
      title:
        `The next run would send about ${tokens} tokens (an estimate: this model’s context window is not known)` +
        (failedForSize ? '; the last run did not fit it (context_length_exceeded)' : ''),
    };
  }
  const ratio = context.tokens / context.window;
  const state: TokenMeterState = failedForSize || ratio > 1 ? 'over' : ratio > NEAR_RATIO ? 'near' : 'normal';
  const window = count.format(context.window);
  return {
    state,
    ...labelled(`${tokens} / ${window}`, ' tokens'),
    percent: Math.min(100, Math.round(ratio * 100)),
    strategy: context.strategy,
    title:
      `The next run would send ${tokens} tokens of the model’s ${window}-token window (${Math.round(ratio * 100)}%)` +
      (failedForSize ? '; the last run did not fit it (context_length_exceeded)' : ''),
  };
}
