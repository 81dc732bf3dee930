// The GenAI client metrics of the semantic conventions, recorded per model call: token usage, the call's
// duration, time to its first streamed chunk and time per output chunk. No-ops unless metrics are exported
// (telemetryOptions().metrics); the tenant is an attribute only when the operator opted in (cardinality).

import { metrics, type Attributes, type Histogram } from '@opentelemetry/api';
import { CANOPY_ATTR, GEN_AI, GEN_AI_METRIC } from './gen-ai';
import { CANOPY_INSTRUMENTATION, telemetryOptions } from './telemetry';

/** The conventions' advised buckets. */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864,
];
const SECONDS_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
const CHUNK_BUCKETS = [0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5];

interface Instruments {
  tokens: Histogram;
  duration: Histogram;
  firstChunk: Histogram;
  perChunk: Histogram;
}

let instruments: Instruments | null = null;

/** The instruments, made on first use (after the SDK registered its meter provider). */
function made(): Instruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter(CANOPY_INSTRUMENTATION);
  instruments = {
    tokens: meter.createHistogram(GEN_AI_METRIC.tokenUsage, {
      description: 'Tokens used per model call, by type (input, output)',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    duration: meter.createHistogram(GEN_AI_METRIC.operationDuration, {
      description: 'Duration of a model call',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    }),
    firstChunk: meter.createHistogram(GEN_AI_METRIC.timeToFirstChunk, {
      description: 'Time from a model call to its first streamed chunk',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    }),
    perChunk: meter.createHistogram(GEN_AI_METRIC.timePerOutputChunk, {
      description: 'Time between streamed output chunks after the first',
      unit: 's',
      advice: { explicitBucketBoundaries: CHUNK_BUCKETS },
    }),
  };
  return instruments;
}

/** Forgets the instruments (tests that register a new meter provider). */
export function resetGenAiMetrics(): void {
  instruments = null;
}

/** What one model call's metrics are recorded with. */
export interface ModelCallFigures {
  provider: string;
  requestModel: string;
  responseModel: string;
  tenantId: string | undefined;
  durationS: number;
  /** null: nothing streamed. */
  firstChunkS: number | null;
  /** Gaps between output chunks after the first, in seconds. */
  chunkGapsS: readonly number[];
  inputTokens: number | null;
  outputTokens: number | null;
  /** Set when the call failed. */
  errorType?: string;
}

export function recordModelCall(figures: ModelCallFigures): void {
  if (!telemetryOptions().metrics) return;
  const i = made();
  const attributes: Attributes = {
    [GEN_AI.operationName]: 'chat',
    [GEN_AI.providerName]: figures.provider,
    [GEN_AI.requestModel]: figures.requestModel,
    [GEN_AI.responseModel]: figures.responseModel,
  };
  if (telemetryOptions().metricsTenant && figures.tenantId)
    attributes[CANOPY_ATTR.tenantId] = figures.tenantId;
  i.duration.record(
    figures.durationS,
    figures.errorType ? { ...attributes, [GEN_AI.errorType]: figures.errorType } : attributes,
  );
  if (figures.errorType) return;
  if (figures.firstChunkS !== null) i.firstChunk.record(figures.firstChunkS, attributes);
  for (const gap of figures.chunkGapsS) i.perChunk.record(gap, attributes);
  if (figures.inputTokens !== null) {
    i.tokens.record(figures.inputTokens, { ...attributes, [GEN_AI.tokenType]: 'input' });
  }
  if (figures.outputTokens !== null) {
    i.tokens.record(figures.outputTokens, { ...attributes, [GEN_AI.tokenType]: 'output' });
  }
}
