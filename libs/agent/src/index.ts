// @canopy/agent: the turn runner — model steps through the model gateway, server/client/approval tools (a tenant's
// MCP servers' tools among them), hooks, retries, max steps, cancel — emitting events and handing messages to the
// session layer at commit points.

export * from './model';
export * from './tools/server-tool';
export * from './tools/tool-registry';
export * from './hooks/hook';
export * from './hooks/hook-registry';
export * from './run/retry';
export * from './run/run-state';
export * from './run/tool-executor';
export * from './run/turn-runner';
export * from './run/interrupted';
export * from './context/context-plan';
export * from './context/context-view';
export * from './context/tokens';
export * from './tools/demo-tools';
export * from './tools/arithmetic';
export * from './mcp/mcp-result';
export * from './mcp/mcp-client-pool';
export * from './mcp/mcp-toolbox';
export * from './files';
export * from './telemetry/traced.gateway';
export * from './telemetry/tool-spans';
export * from './telemetry/gen-ai-content';
export * from './agent.module';
