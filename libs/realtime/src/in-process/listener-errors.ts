// How the in-process adapters call their listeners: synchronously, one at a time, and a listener that throws is
// reported instead of breaking delivery to the others or the publisher's call.

import { Logger } from '@nestjs/common';

export type ListenerErrorHandler = (error: unknown) => void;

/** The default report for a throwing listener: an error log line under the adapter's name. */
export function logListenerError(context: string): ListenerErrorHandler {
  const logger = new Logger(context);
  return (error) =>
    logger.error(`a listener threw: ${String(error)}`, error instanceof Error ? error.stack : undefined);
}

/** Calls the listener; a throw goes to onError (and a throwing onError is ignored: delivery must go on). */
export function callListener<T>(listener: (value: T) => void, value: T, onError: ListenerErrorHandler): void {
  try {
    listener(value);
  } catch (error) {
    try {
      onError(error);
    } catch {
      // Nothing sensible is left to do; delivery to the other listeners goes on.
    }
  }
}
