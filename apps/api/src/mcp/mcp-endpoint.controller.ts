// /v1/mcp: Canopy as an MCP server over Streamable HTTP, stateless (a server and a transport per request, JSON
// answers). The guard authenticates it like every route (an API key or a user token); the tools act in the
// caller's Scope. GET (a server-sent stream) and DELETE (ending an MCP session) have nothing to serve here: 405.

import { Controller, Delete, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Request, Response } from 'express';
import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { CanopyMcpService } from './canopy-mcp.service';

@ApiTags('mcp')
@ApiBearerAuth()
@Controller('v1/mcp')
export class McpEndpointController {
  constructor(private readonly mcp: CanopyMcpService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Canopy as an MCP server (Streamable HTTP, stateless; JSON-RPC 2.0 bodies, `Accept: application/json, text/event-stream`): the tools search_conversations, get_conversation, create_session and prompt_session over the caller’s own sessions',
  })
  async handle(@CurrentScope() scope: Scope, @Req() req: Request, @Res() res: Response): Promise<void> {
    const server = this.mcp.serverFor(scope);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }

  @Get()
  @ApiExcludeEndpoint()
  stream(): never {
    throw new CanopyException('method_not_allowed', 'this MCP server is stateless: POST JSON-RPC messages');
  }

  @Delete()
  @ApiExcludeEndpoint()
  end(): never {
    throw new CanopyException(
      'method_not_allowed',
      'this MCP server is stateless: there is no session to end',
    );
  }
}
