// A tenant's MCP servers: create, list, read, update, delete, and an end user's own headers for one. A URL that is
// or resolves to a loopback, private, link-local or reserved address is refused (400 on `url`) unless the operator
// allows it (ALLOW_PRIVATE_TARGETS); every connection to it is checked again.

import { Inject, Injectable } from '@nestjs/common';
import { assertTargetAllowed, CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import type {
  CreateMcpServerRequest,
  McpCredentialsView,
  McpServerView,
  Scope,
  UpdateMcpServerRequest,
} from '@canopy/core';
import { McpServersRepository } from './mcp-servers.repository';

@Injectable()
export class McpServersService {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly servers: McpServersRepository,
  ) {}

  async create(scope: Scope, input: CreateMcpServerRequest): Promise<McpServerView> {
    await this.checkUrl(input.url);
    return this.servers.create(scope, {
      name: input.name,
      url: input.url,
      headers: input.headers ?? null,
      allowedTools: input.allowedTools ? [...new Set(input.allowedTools)] : null,
      approval: input.approval ?? 'never',
      enabled: input.enabled ?? true,
      timeoutMs: input.timeoutMs ?? null,
      userCredentials: input.userCredentials ?? false,
    });
  }

  list(scope: Scope): Promise<McpServerView[]> {
    return this.servers.list(scope);
  }

  get(scope: Scope, id: string): Promise<McpServerView> {
    return this.servers.get(scope, id);
  }

  async update(scope: Scope, id: string, patch: UpdateMcpServerRequest): Promise<McpServerView> {
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    return this.servers.update(scope, id, {
      ...patch,
      ...(patch.allowedTools ? { allowedTools: [...new Set(patch.allowedTools)] } : {}),
    });
  }

  delete(scope: Scope, id: string): Promise<void> {
    return this.servers.delete(scope, id);
  }

  putCredentials(
    scope: Scope,
    serverId: string,
    userId: string,
    headers: Record<string, string>,
  ): Promise<McpCredentialsView> {
    checkUserId(userId);
    return this.servers.putCredentials(scope, serverId, userId, headers);
  }

  deleteCredentials(scope: Scope, serverId: string, userId: string): Promise<void> {
    checkUserId(userId);
    return this.servers.deleteCredentials(scope, serverId, userId);
  }

  private checkUrl(url: string): Promise<void> {
    return assertTargetAllowed(url, this.config.targets.tenantUrls, 'url', 'MCP server URL');
  }
}

function checkUserId(userId: string): void {
  // An end user id as sessions carry it: 1 to 200 characters, none of them a control character.
  if (userId.length < 1 || userId.length > 200 || [...userId].some((c) => c.charCodeAt(0) < 0x20))
    throw CanopyException.badRequest('userId: 1 to 200 characters', {
      field: 'userId',
    });
}
