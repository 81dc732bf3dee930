// A tenant's settings (GET and PUT /v1/settings, a tenant key): the defaults the tenant's new sessions take. Each
// field is one default; a PUT replaces the ones it names (null removes one) and leaves the others as they are, so
// more defaults can join the body. Shared by the api (validation, OpenAPI) and the SDK (types).

import { z } from 'zod';
import { sessionMcpServersSchema } from './mcp-schemas';
import { contextPolicySchema, type ContextPolicy } from './schemas';

export const tenantSettingsSchema = z
  .object({
    /**
     * The context policy of a session created without `opts.context` (copied into its opts at creation: changing it
     * affects new sessions only); null removes it (such sessions then have none, which is `none`).
     */
    context: contextPolicySchema.nullable().optional(),
    /**
     * The names of the tenant's MCP servers a session created without `opts.mcpServers` enables (copied into its opts
     * at creation, less any server deleted since); each must name one of the tenant's servers; null removes it.
     */
    mcpServers: sessionMcpServersSchema.nullable().optional(),
    /**
     * Whether the end user's id (`enduser.id`) may be on the OpenTelemetry spans of the tenant's runs started with a
     * user token, where the operator records it (CANOPY_OTEL_USER_ID); false until set.
     */
    telemetryUserId: z.boolean().optional(),
  })
  .strict();

export type TenantSettingsRequest = z.infer<typeof tenantSettingsSchema>;

/** A tenant's settings as GET and PUT /v1/settings answer them; `updatedAt` null while none was ever set. */
export interface TenantSettingsView {
  context: ContextPolicy | null;
  mcpServers: string[] | null;
  telemetryUserId: boolean;
  updatedAt: string | null;
}

export const tenantSettingsViewSchema = z.object({
  context: contextPolicySchema.nullable(),
  mcpServers: z.array(z.string()).nullable(),
  telemetryUserId: z.boolean(),
  updatedAt: z.string().nullable(),
});
