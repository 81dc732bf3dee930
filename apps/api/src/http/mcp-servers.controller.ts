// A tenant's MCP servers (a tenant API key): create, list, read (with its state: the tools it lists, when it was
// last reached, its last error), update, delete; and an end user's own headers for a server that acts on their
// behalf. Headers are sealed at rest and never returned. A URL that is or resolves to a loopback, private,
// link-local or reserved address is refused (400 on `url`) unless the operator allows it (ALLOW_PRIVATE_TARGETS);
// every connection to it is checked again.

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { McpServersService } from '@canopy/tenancy';
import { McpToolbox } from '@canopy/agent';
import { CreateMcpServerDto, PutMcpCredentialsDto, UpdateMcpServerDto } from './dto';

@ApiTags('mcp')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/mcp-servers')
export class McpServersController {
  constructor(
    private readonly servers: McpServersService,
    private readonly toolbox: McpToolbox,
  ) {}

  @Post()
  @ApiOperation({
    summary:
      'Add an MCP server {name, url, headers?, allowedTools?, approval?, enabled?, timeoutMs?, userCredentials?}: its tools are offered as <name>__<tool> to the sessions that name it in opts.mcpServers. Headers (e.g. Authorization) are encrypted at rest and never returned; approval is "never", "always" or a mode per tool. 400 on a URL that is or resolves to a private address the operator does not allow (ALLOW_PRIVATE_TARGETS); 409 on a name in use',
  })
  create(@CurrentScope() scope: Scope, @Body() body: CreateMcpServerDto) {
    return this.servers.create(scope, body);
  }

  @Get()
  @ApiOperation({
    summary: 'The tenant’s MCP servers by name, each with its last known state (never its headers)',
  })
  async list(@CurrentScope() scope: Scope) {
    return { data: await this.servers.list(scope) };
  }

  @Get(':mcpServerId')
  @ApiOperation({
    summary:
      'One MCP server and its state: the tools it lists (name, description, input schema), when it was last reached and its last error. An enabled server is listed again unless a client of this process holds its tools',
  })
  get(@CurrentScope() scope: Scope, @Param('mcpServerId') id: string) {
    return this.toolbox.describe(scope, id);
  }

  @Patch(':mcpServerId')
  @ApiOperation({
    summary:
      'Change an MCP server {name?, url?, headers? (null removes them), allowedTools?, approval?, enabled?, timeoutMs?, userCredentials?}; a new URL or new headers start its state over',
  })
  update(@CurrentScope() scope: Scope, @Param('mcpServerId') id: string, @Body() body: UpdateMcpServerDto) {
    return this.servers.update(scope, id, body);
  }

  @Delete(':mcpServerId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an MCP server (its users’ credentials with it)' })
  async delete(@CurrentScope() scope: Scope, @Param('mcpServerId') id: string): Promise<void> {
    await this.servers.delete(scope, id);
  }
}

@ApiTags('mcp')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/users/:userId/mcp-servers')
export class McpCredentialsController {
  constructor(private readonly servers: McpServersService) {}

  @Put(':mcpServerId/credentials')
  @ApiOperation({
    summary:
      'Store an end user’s own headers for an MCP server {headers} (encrypted at rest, never returned): runs of that user’s sessions send them to a server with userCredentials, over the server’s own',
  })
  put(
    @CurrentScope() scope: Scope,
    @Param('userId') userId: string,
    @Param('mcpServerId') id: string,
    @Body() body: PutMcpCredentialsDto,
  ) {
    return this.servers.putCredentials(scope, id, userId, body.headers);
  }

  @Delete(':mcpServerId/credentials')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an end user’s headers for an MCP server' })
  async delete(
    @CurrentScope() scope: Scope,
    @Param('userId') userId: string,
    @Param('mcpServerId') id: string,
  ): Promise<void> {
    await this.servers.deleteCredentials(scope, id, userId);
  }
}
