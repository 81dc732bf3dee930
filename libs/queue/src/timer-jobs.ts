// A timer's deterministic key, and its dispatch to the handler of its kind. One idle timer per session, one
// expiry timer per pause of a run (the tool uses it waits on identify the pause), one retention sweep. Keys never contain ':' (BullMQ
// job ids may not).

import { createHash } from 'node:crypto';
import type { Timer, TimerHandlers } from './timers.port';

export function timerKey(timer: Timer): string {
  switch (timer.kind) {
    case 'session-idle':
      return `idle-${timer.tenantId}-${digest(timer.sessionId)}`;
    case 'decision-expiry':
      return `expiry-${timer.runId}-${digest([...timer.toolUseIds].sort().join('\n'))}`;
    case 'retention-sweep':
      return 'retention-sweep';
  }
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/** Calls the handler of the timer's kind. */
export function dispatchTimer(handlers: TimerHandlers, timer: Timer): Promise<void> {
  switch (timer.kind) {
    case 'session-idle':
      return handlers['session-idle'](timer);
    case 'decision-expiry':
      return handlers['decision-expiry'](timer);
    case 'retention-sweep':
      return handlers['retention-sweep'](timer);
  }
}
