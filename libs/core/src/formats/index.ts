// Conversation formats (pure, isomorphic: the service and the SDK share them): canopy (exact), OpenAI and
// Anthropic message arrays, a ChatGPT export's conversation, and markdown for people.

export * from './conversation';
export * from './canopy';
export * from './openai';
export * from './anthropic';
export * from './chatgpt';
export * from './markdown';
export { blockSchema, messageSchema, usageSchema } from './message-schema';
