// One delivery attempt over HTTP, as the Standard Webhooks convention says: a JSON body, `webhook-id` (the
// delivery's id: receivers dedupe retries by it), `webhook-timestamp` and `webhook-signature` (v1, HMAC-SHA256
// under the endpoint's secret, signed by the `standardwebhooks` library). Redirects are not followed (a 3xx is a
// failed attempt), the target is checked by the SSRF guard at connection time (an address literal before
// connecting, a name by the socket's own lookup), and the attempt is bounded by a timeout from connection to the
// end of the response. With OpenTelemetry on, each attempt is a `canopy.webhook.deliver` span (in the trace of the
// run or request that caused the event, when the delivery kept it) whose context the request carries as
// `traceparent`, so a receiver that traces joins the same trace.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  CANOPY_ATTR,
  SPAN,
  canopyTracer,
  contextOf,
  guardedLookup,
  injectTraceHeaders,
  type TraceCarrier,
  literalRefusal,
  TargetRefusedError,
  targetRefusalIn,
  type TargetPolicy,
} from '@canopy/common';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** Response bodies are read (so the connection can be reused) up to this much, and dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export class WebhookSender {
  constructor(private readonly options: { timeoutMs: number; targets: TargetPolicy }) {}

  /**
   * Signs and sends one message; never throws (the result says what happened). `trace`: the trace context the
   * delivery was written in (its attempt's span joins that trace); `eventType` names the event on the span.
   */
  async send(input: {
    url: string;
    secret: string;
    messageId: string;
    body: string;
    eventType?: string;
    trace?: TraceCarrier | null;
  }): Promise<SendResult> {
    const parent = input.trace ? contextOf(input.trace) : context.active();
    const span = canopyTracer().startSpan(
      SPAN.webhook,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [CANOPY_ATTR.webhookId]: input.messageId,
          ...(input.eventType ? { [CANOPY_ATTR.webhookEvent]: input.eventType } : {}),
          'server.address': hostOf(input.url),
        },
      },
      parent,
    );
    if (!span.isRecording()) {
      span.end();
      return this.attempt(input, parent);
    }
    const result = await context.with(trace.setSpan(parent, span), () =>
      this.attempt(input, trace.setSpan(parent, span)),
    );
    if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
    if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? 'failed' });
    span.end();
    return result;
  }

  private async attempt(
    input: { url: string; secret: string; messageId: string; body: string },
    traceContext: ReturnType<typeof context.active>,
  ): Promise<SendResult> {
    const started = performance.now();
    const at = new Date();
    const signature = new Webhook(input.secret).sign(input.messageId, at, input.body);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'Canopy-Webhooks/1',
      'webhook-id': input.messageId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    };
    // traceparent (and tracestate) of the attempt's span, when there is one.
    injectTraceHeaders(headers, traceContext);
    try {
      const statusCode = await this.post(input.url, headers, input.body);
      const ok = statusCode >= 200 && statusCode < 300;
      return {
        ok,
        statusCode,
        latencyMs: Math.round(performance.now() - started),
        error: ok
          ? null
          : statusCode >= 300 && statusCode < 400
            ? `redirect (HTTP ${statusCode}) not followed`
            : `HTTP ${statusCode}`,
      };
    } catch (err) {
      const refused = targetRefusalIn(err);
      return {
        ok: false,
        statusCode: null,
        latencyMs: Math.round(performance.now() - started),
        error: refused
          ? `webhook URL refused: ${refused.reason}`
          : err instanceof Error
            ? err.message
            : String(err),
      };
    }
  }

  private post(url: string, headers: Record<string, string>, body: string): Promise<number> {
    const target = new URL(url);
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    // Node resolves no address literal through `lookup`: those are checked here.
    const refusal = literalRefusal(target.hostname, this.options.targets);
    if (refusal) return Promise.reject(new TargetRefusedError(refusal));
    return new Promise<number>((resolve, reject) => {
      const req = request(
        target,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: guardedLookup(this.options.targets),
          agent: false,
        },
        (res: IncomingMessage) => {
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('close', () => resolve(res.statusCode ?? 0));
          res.on('error', () => resolve(res.statusCode ?? 0));
        },
      );
      const timer = setTimeout(
        () => req.destroy(new Error(`timed out after ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      );
      req.on('error', reject);
      req.on('close', () => clearTimeout(timer));
      req.end(body);
    });
  }
}

/** The host of a URL for a span (never its path or query, which may carry a secret). */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}
