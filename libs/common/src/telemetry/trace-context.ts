// W3C trace context across Canopy's hops: captured where work is handed on (a run's job, a paused run's state) and
// restored where it is taken up; sent as `traceparent` on outgoing requests (MCP calls, webhook deliveries). With
// no SDK started the propagator is a no-op: nothing is captured, nothing sent.

import { ROOT_CONTEXT, context, propagation, trace, type Context, type Link } from '@opentelemetry/api';

/** A trace context as carried in job payloads and stored state. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The active trace context as a carrier; undefined when there is none (or no SDK). */
export function currentTraceCarrier(ctx: Context = context.active()): TraceCarrier | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  if (!carrier.traceparent) return undefined;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/** The context a carrier names (the root context when it names none): spans started in it are its children. */
export function contextOf(carrier: TraceCarrier | undefined | null): Context {
  if (!carrier) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** A link to the span a carrier names (a resumed run to the run that paused); undefined when it names none. */
export function linkTo(
  carrier: TraceCarrier | undefined | null,
  attributes?: Link['attributes'],
): Link | undefined {
  const spanContext = carrier ? trace.getSpanContext(contextOf(carrier)) : undefined;
  if (!spanContext) return undefined;
  return attributes ? { context: spanContext, attributes } : { context: spanContext };
}

/** Adds the trace context's headers (traceparent, tracestate) to outgoing headers, when there is one. */
export function injectTraceHeaders(headers: Record<string, string>, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers);
}

/**
 * A fetch that sends the caller's trace context (`traceparent`) with each request: for clients that take a fetch
 * (the MCP SDK's transports), so their calls join the trace of the tool call that made them.
 */
export function tracingFetch(inner: typeof globalThis.fetch): typeof globalThis.fetch {
  return (input, init) => {
    const carrier = currentTraceCarrier();
    if (!carrier) return inner(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set('traceparent', carrier.traceparent);
    if (carrier.tracestate) headers.set('tracestate', carrier.tracestate);
    return inner(input, { ...init, headers });
  };
}
