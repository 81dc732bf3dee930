// The `‹ 2/3 ›` picker over the versions of a prompt (its edits) or of a reply (its regenerations).

import type { NodeId } from '@canopy/client';

export function Picker({
  ids,
  current,
  disabled,
  onPick,
  testId,
  what,
}: {
  ids: NodeId[];
  current: NodeId | null;
  disabled: boolean;
  onPick: (id: NodeId) => void;
  testId: string;
  /** What the versions are of, for screen readers ("prompt", "reply"). */
  what: string;
}) {
  if (ids.length < 2 || current === null) return null;
  const i = ids.indexOf(current);
  const prev = ids[i - 1];
  const next = ids[i + 1];
  return (
    <span className="picker" data-testid={testId} role="group" aria-label={`Versions of this ${what}`}>
      <button
        type="button"
        disabled={disabled || prev === undefined}
        onClick={() => prev !== undefined && onPick(prev)}
        data-testid={`${testId}-prev`}
        aria-label={`previous version of this ${what}`}
      >
        ‹
      </button>
      <span data-testid={`${testId}-position`}>
        {i + 1}/{ids.length}
      </span>
      <button
        type="button"
        disabled={disabled || next === undefined}
        onClick={() => next !== undefined && onPick(next)}
        data-testid={`${testId}-next`}
        aria-label={`next version of this ${what}`}
      >
        ›
      </button>
    </span>
  );
}
