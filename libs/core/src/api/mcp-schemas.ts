// Request schemas of a tenant's MCP servers (the Model Context Protocol): the servers (POST, PATCH) and an end
// user's own headers for one (PUT credentials), and the names sessions enable them by (opts.mcpServers). Shared by
// the api (validation, OpenAPI), the session checks and the SDK (types).

import { z } from 'zod';

/** A server's name: it prefixes its tools (`<server>__<tool>`), so short and plain. */
export const MCP_SERVER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** What separates a server's name from its tool's in the name the model sees. */
export const MCP_TOOL_SEPARATOR = '__';

export const mcpServerNameSchema = z
  .string()
  .regex(MCP_SERVER_NAME, '1 to 32 characters of a-z, 0-9, _ and -, starting with a letter or digit')
  .refine((v) => !v.includes(MCP_TOOL_SEPARATOR), {
    message: `no "${MCP_TOOL_SEPARATOR}" (it separates the server from the tool)`,
  });

/** An http(s) URL without credentials in it (they go in headers, sealed). */
const mcpUrl = z
  .url({ protocol: /^https?$/ })
  .max(2_000)
  .refine((v) => !/^https?:\/\/[^/?#]*@/i.test(v), { message: 'an http(s) URL without credentials' });

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
/** Names the transport sets itself: a tenant's headers never replace them. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

/** Headers sent with every request to the server (e.g. Authorization): secrets, sealed at rest, never returned. */
export const mcpHeadersSchema = z
  .record(
    z
      .string()
      .regex(HEADER_NAME, 'an HTTP header name')
      .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), {
        message: 'a header the transport sets itself',
      }),
    z
      .string()
      .max(8_000)
      .refine((v) => !/[\r\n\0]/.test(v), { message: 'a header value on one line' }),
  )
  .refine((h) => Object.keys(h).length <= 20, { message: 'at most 20 headers' });

const toolName = z.string().min(1).max(128);
const approvalMode = z.enum(['never', 'always']);

/** "never" (the default), "always", or a mode per tool (tools it does not name: never). */
export const mcpApprovalSchema = z.union([
  approvalMode,
  z
    .record(toolName, approvalMode)
    .refine((m) => Object.keys(m).length <= 200, { message: 'at most 200 tools' }),
]);

const mcpServerFields = {
  name: mcpServerNameSchema,
  url: mcpUrl,
  headers: mcpHeadersSchema.optional(),
  /** Only these of the server's tools are offered (absent: all it lists). */
  allowedTools: z.array(toolName).max(200).optional(),
  approval: mcpApprovalSchema.optional(),
  enabled: z.boolean(),
  /** Per-call timeout (default TOOL_TIMEOUT_MS). */
  timeoutMs: z.number().int().min(100).max(600_000).optional(),
  /** Calls act on the session user's behalf with their own headers (PUT /v1/users/:userId/mcp-servers/:id/credentials). */
  userCredentials: z.boolean().optional(),
};

export const createMcpServerSchema = z
  .object({ ...mcpServerFields, enabled: mcpServerFields.enabled.default(true) })
  .strict();

export const updateMcpServerSchema = z
  .object({
    name: mcpServerFields.name.optional(),
    url: mcpServerFields.url.optional(),
    /** null removes them. */
    headers: mcpHeadersSchema.nullable().optional(),
    allowedTools: mcpServerFields.allowedTools.unwrap().nullable().optional(),
    approval: mcpApprovalSchema.optional(),
    enabled: z.boolean().optional(),
    timeoutMs: mcpServerFields.timeoutMs.unwrap().nullable().optional(),
    userCredentials: z.boolean().optional(),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'give at least one field to change' });

export const putMcpCredentialsSchema = z.object({ headers: mcpHeadersSchema }).strict();

/** A session's opts.mcpServers: the names of the tenant's MCP servers its agent may use. */
export const sessionMcpServersSchema = z.array(mcpServerNameSchema).max(20);

export type McpApproval = z.infer<typeof mcpApprovalSchema>;
export type CreateMcpServerRequest = z.input<typeof createMcpServerSchema>;
export type UpdateMcpServerRequest = z.infer<typeof updateMcpServerSchema>;
export type PutMcpCredentialsRequest = z.infer<typeof putMcpCredentialsSchema>;
