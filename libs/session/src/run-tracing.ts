// A run as OpenTelemetry sees it: one `invoke_agent` span per execution (GenAI conventions: the session is the
// conversation), in the trace of the request that started it (the queue restores that context), with its model
// calls, tool calls, summaries and commits as children. A resumed run's execution links to the one that paused.
// With no SDK started every call here is a no-op.

import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { CANOPY_ATTR, GEN_AI, SPAN, canopyTracer, linkTo, telemetryOptions } from '@canopy/common';
import { isPendingState, type RunOutcome } from '@canopy/agent';
import type { RunJob } from '@canopy/queue';
import type { RunRecord, SessionRecord } from '@canopy/store';
import type { Scope } from '@canopy/core';

/** Runs one execution of a run inside its `invoke_agent` span. */
export async function traceRun(job: RunJob, execute: (span: Span) => Promise<void>): Promise<void> {
  const span = canopyTracer().startSpan(SPAN.invokeAgent, {
    kind: SpanKind.INTERNAL,
    attributes: {
      [GEN_AI.operationName]: 'invoke_agent',
      [GEN_AI.agentName]: 'canopy',
      [GEN_AI.conversationId]: job.sessionId,
      [CANOPY_ATTR.tenantId]: job.tenantId,
      [CANOPY_ATTR.runId]: job.runId,
    },
  });
  if (!span.isRecording()) {
    span.end();
    return execute(span);
  }
  try {
    await context.with(trace.setSpan(context.active(), span), () => execute(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * What the run is, once loaded: its kind, model, attempt, the paused run it resumes, and the end user who acts it
 * where both the operator (CANOPY_OTEL_USER_ID) and the tenant (its settings) allow it: the tenant's consent is read
 * only then.
 */
export async function describeRun(
  span: Span,
  session: SessionRecord,
  run: RunRecord,
  acting: Scope,
  tenant?: { userIdAllowed(tenantId: string): Promise<boolean> },
): Promise<void> {
  if (!span.isRecording()) return;
  const colon = session.model.indexOf(':');
  span.setAttributes({
    [CANOPY_ATTR.runKind]: run.kind,
    [CANOPY_ATTR.runAttempt]: run.attempts,
    [GEN_AI.providerName]: colon > 0 ? session.model.slice(0, colon) : session.model,
    [GEN_AI.requestModel]: colon > 0 ? session.model.slice(colon + 1) : session.model,
  });
  if (telemetryOptions().userId && acting.userId && tenant) {
    const allowed = await tenant.userIdAllowed(acting.tenantId).catch(() => false);
    if (allowed) span.setAttribute(CANOPY_ATTR.endUserId, acting.userId);
  }
  const paused = run.pending && isPendingState(run.pending) ? linkTo(run.pending.trace) : undefined;
  if (paused) span.addLink({ ...paused, attributes: { 'canopy.link': 'paused_run' } });
}

/** How the execution ended, and the run's usage so far. */
export function endOfRun(span: Span, outcome: RunOutcome): void {
  if (!span.isRecording()) return;
  span.setAttributes({
    [CANOPY_ATTR.runStatus]: outcome.status,
    [GEN_AI.inputTokens]:
      outcome.usage.inputTokens + outcome.usage.cacheReadTokens + outcome.usage.cacheWriteTokens,
    [GEN_AI.outputTokens]: outcome.usage.outputTokens,
  });
  if (outcome.status === 'error') {
    span.setAttribute(GEN_AI.errorType, outcome.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message });
  }
}

/** A commit of the run's messages, as a `canopy.commit` span (its SQL under it). */
export async function traceCommit<T>(messages: number, stop: boolean, commit: () => Promise<T>): Promise<T> {
  const span = canopyTracer().startSpan(SPAN.commit, {
    attributes: { [CANOPY_ATTR.messages]: messages, [CANOPY_ATTR.commitStop]: stop },
  });
  if (!span.isRecording()) {
    span.end();
    return commit();
  }
  try {
    return await context.with(trace.setSpan(context.active(), span), commit);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}
