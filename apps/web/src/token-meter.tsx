// The chat header's token meter: what the next run would send against the model's window, with a bar, the
// session's context policy, and a warning near the window or an error past it (see token-meter-state.ts).

import type { ContextMeter } from '@canopy/client';
import { tokenMeterDisplay } from './token-meter-state';

export function TokenMeter({
  loading,
  context,
  lastError,
}: {
  loading: boolean;
  context: ContextMeter | null | undefined;
  lastError: string | null | undefined;
}) {
  const meter = tokenMeterDisplay({ loading, context, lastError });
  return (
    <span
      className={`token-meter meter-${meter.state}`}
      title={meter.title}
      data-testid="token-meter"
      data-state={meter.state}
    >
      <span className="meter-label" data-testid="token-meter-label">
        {meter.figure}
        {meter.unit && <span className="meter-unit">{meter.unit}</span>}
      </span>
      {meter.percent !== null && (
        // SVG attributes, not an inline style: the page's CSP allows no inline styles.
        <svg
          className="meter-bar"
          viewBox="0 0 100 6"
          preserveAspectRatio="none"
          role="meter"
          aria-label="Context window used"
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={meter.percent}
        >
          <rect className="meter-track" width="100" height="6" rx="3" />
          <rect className="meter-fill" width={meter.percent} height="6" rx="3" />
        </svg>
      )}
      {meter.strategy !== null && (
        <span
          className="meter-strategy"
          title="The context policy (opts.context)"
          data-testid="token-meter-strategy"
        >
          {meter.strategy}
        </span>
      )}
    </span>
  );
}
