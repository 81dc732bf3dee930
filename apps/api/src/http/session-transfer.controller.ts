// Conversations in and out: fork a session from any node, export one (canopy, openai, anthropic, markdown),
// import one (canopy, openai, anthropic, chatgpt), and in bulk: every session of the tenant (or user) as NDJSON
// canopy documents, and NDJSON lines imported each on its own with a report per line.

import { Body, Controller, Get, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CanopyException, CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionCatalogService, SessionTransferService } from '@canopy/manager';
import { BulkExportQueryDto, BulkImportQueryDto, ExportQueryDto, ForkDto, ImportDto } from './dto';
import { NDJSON, bytesOf, ndjsonLines, streamNdjson, writeLine } from './ndjson';
import { filterFromQuery } from './session-filter.query';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1')
export class SessionTransferController {
  constructor(
    private readonly catalog: SessionCatalogService,
    private readonly transfer: SessionTransferService,
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
  ) {}

  @Post('sessions/:id/fork')
  @ApiOperation({
    summary:
      "A new session whose tree is the path from the root to nodeId (default: the active tip), ids from 1, usage kept; metadata.forkedFrom names the origin. Works while the source is busy. The fork shares the source's messages instead of copying them (copy-on-write): it reads, searches and exports as a copy would, and stays whole when the source is deleted.",
  })
  fork(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: ForkDto) {
    return this.catalog.fork(scope, id, body);
  }

  @Get('sessions/:id/export')
  @ApiProduces('application/json', 'text/markdown')
  @ApiOperation({
    summary:
      'Export a session: canopy (the whole tree, round-trips through import), openai / anthropic (the active path as those APIs’ messages), markdown',
  })
  async export(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Query() query: ExportQueryDto,
    @Res() res: Response,
  ): Promise<void> {
    const { contentType, body } = await this.transfer.export(scope, id, query.format);
    res.status(200).type(contentType);
    if (typeof body === 'string') res.send(body);
    else res.send(JSON.stringify(body));
  }

  @Post('sessions/import')
  @ApiOperation({
    summary:
      'Import a conversation as a new session: canopy (exact tree, its id kept), openai / anthropic messages (a linear path), chatgpt (one conversations.json entry, branches kept). All or nothing; bad input names the field.',
  })
  @ApiBody({ type: ImportDto })
  import(@CurrentScope() scope: Scope, @Req() req: Request) {
    // The body arrives as bytes (app.factory.ts): the import parses and checks it, off the event loop when large.
    return this.transfer.importBody(scope, jsonBodyBytes(req));
  }

  @Get('export')
  @ApiProduces(NDJSON)
  @ApiOperation({
    summary:
      'Every session of the tenant (a user token: of its user) matching the list filters, as NDJSON canopy documents, oldest created first; resume with cursor = base64url({"createdAt","id"}) of the last line',
  })
  async exportAll(
    @CurrentScope() scope: Scope,
    @Query() query: BulkExportQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await streamNdjson(
      res,
      this.transfer.exportAll(scope, filterFromQuery(query, req), query.cursor ?? null),
    );
  }

  @Post('import')
  @ApiConsumes(NDJSON)
  @ApiProduces(NDJSON)
  @ApiBody({ schema: { type: 'string', description: 'one JSON document of `format` per line' } })
  @ApiOperation({
    summary:
      'Import NDJSON, one conversation per line (format: canopy by default), each all or nothing; answers NDJSON, one report per line: {line, ok: true, id, nodes} or {line, ok: false, error: {code, message, field?}}',
  })
  async importAll(
    @CurrentScope() scope: Scope,
    @Query() query: BulkImportQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const type = req.headers['content-type'] ?? '';
    if (
      (req as { _body?: boolean })._body ||
      !/^(application\/(x-)?ndjson|application\/jsonl|text\/plain)\b/i.test(type)
    ) {
      throw new CanopyException('unsupported_media_type', `send NDJSON (content-type ${NDJSON})`);
    }
    const reports = this.transfer.importLines(
      scope,
      ndjsonLines(req, bytesOf(this.config.http.importBodyLimit)),
      {
        format: query.format,
        ...(query.userId !== undefined ? { userId: query.userId } : {}),
        ...(query.model !== undefined ? { model: query.model } : {}),
      },
    );
    // The first line's report is made before the answer starts, so a refusal of the whole import (too many heavy
    // operations in flight, the database away) is an error answer, not a line.
    const first = await reports.next();
    res.status(200).type(NDJSON);
    res.flushHeaders();
    try {
      if (!first.done) await writeLine(res, first.value);
      for await (const report of reports) await writeLine(res, report);
    } catch (err) {
      // A failure that is no bad line (the database went away): said on a last line; lines reported ok before it
      // are imported, the rest are not.
      const unavailable =
        err instanceof CanopyException ? err : CanopyException.unavailable('import interrupted');
      await writeLine(res, { ok: false, error: { code: unavailable.code, message: unavailable.message } });
    }
    res.end();
  }
}

/**
 * A JSON body's bytes, as the raw parser left them; the answers for none or another content type are the JSON
 * routes' own (a schema failure at the body's root, saying what to send).
 */
function jsonBodyBytes(req: Request): Uint8Array {
  const type = req.headers['content-type'];
  const body: unknown = req.body;
  const json = /^application\/([\w.+-]+\+)?json\b/i.test(type ?? '');
  // An empty JSON body is an empty object, as the JSON parser reads it: the schema then names what is missing.
  if (json && (!Buffer.isBuffer(body) || body.length === 0)) return new TextEncoder().encode('{}');
  if (!json || !Buffer.isBuffer(body)) {
    const sent = type ? `content-type ${type.split(';')[0]!.trim()}` : 'no content-type';
    throw CanopyException.badRequest(
      `the request body must be JSON sent with "content-type: application/json" (this request had ${sent})`,
      {
        issues: [{ path: '', message: 'expected object, received undefined' }],
        expected: 'application/json',
      },
    );
  }
  // As the JSON parser: UTF-8 only.
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type!)?.[1];
  if (charset && !/^utf-?8$/i.test(charset)) {
    throw new CanopyException('unsupported_media_type', 'unsupported body encoding');
  }
  return body;
}
