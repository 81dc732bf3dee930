// The names Canopy's spans and metrics use: OpenTelemetry's GenAI semantic conventions (gen_ai.*) where they say
// something, canopy.* for Canopy's own concepts (tenant, run). One place, so docs/observability.md lists them all.

/** Span names (the model's or tool's name follows `chat ` and `execute_tool `). */
export const SPAN = {
  invokeAgent: 'invoke_agent',
  chat: 'chat',
  executeTool: 'execute_tool',
  summarize: 'canopy.summarize',
  commit: 'canopy.commit',
  webhook: 'canopy.webhook.deliver',
} as const;

export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  conversationId: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  tokenType: 'gen_ai.token.type',
  errorType: 'error.type',
} as const;

export const CANOPY_ATTR = {
  tenantId: 'canopy.tenant.id',
  runId: 'canopy.run.id',
  runKind: 'canopy.run.kind',
  runStatus: 'canopy.run.status',
  runAttempt: 'canopy.run.attempt',
  /** A model step's attempt (0 the first; a retry counts up). */
  attempt: 'canopy.model.attempt',
  /** server, client or mcp. */
  toolKind: 'canopy.tool.kind',
  messages: 'canopy.commit.messages',
  commitStop: 'canopy.commit.stop',
  webhookEvent: 'canopy.webhook.event',
  webhookId: 'canopy.webhook.id',
  endUserId: 'enduser.id',
} as const;

/** The metric names (histograms). */
export const GEN_AI_METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
  timeToFirstChunk: 'gen_ai.client.operation.time_to_first_chunk',
  timePerOutputChunk: 'gen_ai.client.operation.time_per_output_chunk',
} as const;
