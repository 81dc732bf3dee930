// What the long-conversation tests share: a deployment whose OpenAI-compatible provider is the local fake one with a
// small window, a fake that answers summarizing calls with a summary naming the last turn it covers, and readers of
// the Chat Completions requests it recorded.

import type { FakeLlmServer, FakeRequest } from '@canopy/testing';

/** The apps' environment: the fake provider as the deployment's OpenAI-compatible server, `model` with its limits. */
export function fakeProviderEnv(
  fake: FakeLlmServer,
  model: { name: string; window: number; maxOutput: number },
): Record<string, string> {
  return {
    ALLOW_PRIVATE_TARGETS: '127.0.0.1',
    OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
    OPENAI_COMPATIBLE_MODELS: model.name,
    MODEL_LIMITS: `openai-compatible:${model.name}=${model.window}/${model.maxOutput}`,
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_TENANT: '0',
  };
}

/** The texts of a Chat Completions request's messages (the system prompt first). */
export function sentTexts(body: Record<string, unknown>): string[] {
  return (body.messages as Array<{ content: unknown }>).map((m) =>
    typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
  );
}

/** A summarizing call: its one message asks for a summary. */
export const isSummaryCall = (body: Record<string, unknown>): boolean =>
  sentTexts(body).some((text) => text.startsWith('Summarize the conversation below'));

/** The numbers of the turns a request carries ("turn N:"). */
export const turnsIn = (body: Record<string, unknown>): number[] =>
  [
    ...sentTexts(body)
      .join('\n')
      .matchAll(/turn (\d+):/g),
  ].map((m) => Number(m[1]));

/**
 * Answers summarizing calls with "SUMMARY through turn N" (N the last turn they were given) and every other call
 * with a reply of `replyWords` words.
 */
export function answerWithSummaries(
  fake: FakeLlmServer,
  replyWords: number,
  summaryInputTokens: number,
): void {
  fake.respondWith((request) =>
    isSummaryCall(request.body)
      ? {
          text: [`SUMMARY through turn ${Math.max(...turnsIn(request.body))}`],
          usage: { inputTokens: summaryInputTokens, outputTokens: 9 },
        }
      : {
          text: ['reply: ', 'ipsum '.repeat(replyWords)],
          usage: { inputTokens: 10, outputTokens: replyWords },
        },
  );
}

/** The fake's requests since `from`: the runs' own calls, and the summarizing ones. */
export const mainCalls = (fake: FakeLlmServer, from: number): FakeRequest[] =>
  fake.requests.slice(from).filter((r) => !isSummaryCall(r.body));
export const summaryCalls = (fake: FakeLlmServer, from: number): FakeRequest[] =>
  fake.requests.slice(from).filter((r) => isSummaryCall(r.body));
