// Files: upload (multipart field `file`, or a raw body with its content type), list, read the metadata, stream the
// bytes, sign a short-lived URL for them, delete. Tenant- and user-scoped as sessions are: a user token reaches the
// files its user uploaded, a tenant key every file of its tenant; another tenant's file answers 404. Bytes are
// served with their sniffed type, `X-Content-Type-Options: nosniff`, and `Content-Disposition: attachment` except
// for images (inline, for <img>).

import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  fileUrlSchema,
  listFilesQuerySchema,
  signedFileQuerySchema,
  uploadFileQuerySchema,
  type FileUrlView,
  type FileView,
  type Scope,
} from '@canopy/core';
import { CanopyException, InjectConfig, type CanopyConfig } from '@canopy/common';
import { CurrentScope, Public } from '@canopy/auth';
import { FilesService, type FileRecord } from '@canopy/store';
import { uploadOf } from './file-upload';
import { FileUrlSigner } from './file-urls';

class ListFilesQueryDto extends createZodDto(listFilesQuerySchema) {}
class UploadFileQueryDto extends createZodDto(uploadFileQuerySchema) {}
class FileUrlDto extends createZodDto(fileUrlSchema) {}

export function fileView(f: FileRecord): FileView {
  return {
    id: f.id,
    name: f.name,
    mediaType: f.mediaType,
    bytes: f.bytes,
    sha256: f.sha256,
    userId: f.userId,
    createdAt: f.createdAt.toISOString(),
  };
}

/** Served inline (an <img> shows them); everything else is a download. SVG is not among them: it runs scripts. */
const INLINE_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
]);

@ApiTags('files')
@Controller('v1/files')
export class FilesController {
  constructor(
    private readonly files: FilesService,
    private readonly signer: FileUrlSigner,
    @InjectConfig() private readonly config: CanopyConfig,
  ) {}

  @Post()
  @ApiBearerAuth()
  @ApiConsumes('multipart/form-data', 'application/octet-stream')
  @ApiBody({
    schema: {
      type: 'object',
      properties: { file: { type: 'string', format: 'binary' } },
      required: ['file'],
    },
  })
  @ApiOperation({
    summary:
      'Upload a file: multipart/form-data with the file in the field `file`, or the raw bytes as the body (any content type; ?name= names it). 201 {id, name, mediaType, bytes, sha256 (hex), userId, createdAt}. The media type is sniffed from the bytes, not taken from the request. 413 payload_too_large past FILES_MAX_BYTES (refused as it streams), 429 quota_exceeded past the tenant’s storage quota',
  })
  async upload(
    @CurrentScope() scope: Scope,
    @Query() query: UploadFileQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<FileView> {
    try {
      res.status(201);
      return fileView(await this.files.upload(scope, await uploadOf(req, query.name)));
    } catch (err) {
      // The rest of the body is not read: the connection closes after the answer instead of draining it.
      if (!req.complete) res.setHeader('connection', 'close');
      throw err;
    }
  }

  @Get()
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      'Files, newest first: the tenant’s with an API key, the user’s own with a user token. {data, nextCursor}',
  })
  async list(@CurrentScope() scope: Scope, @Query() query: ListFilesQueryDto) {
    const before = query.cursor !== undefined ? parseCursor(query.cursor) : null;
    const rows = await this.files.list(scope, { limit: query.limit + 1, before });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      data: page.map(fileView),
      nextCursor: rows.length > query.limit && last ? cursorOf(last) : null,
    };
  }

  @Get(':fileId')
  @ApiBearerAuth()
  @ApiOperation({ summary: 'A file’s metadata {id, name, mediaType, bytes, sha256, userId, createdAt}' })
  async get(@CurrentScope() scope: Scope, @Param('fileId') id: string): Promise<FileView> {
    return fileView(await this.files.get(scope, id));
  }

  @Get(':fileId/content')
  @ApiBearerAuth()
  @ApiProduces('application/octet-stream')
  @ApiOperation({
    summary:
      'A file’s bytes, streamed, with its sniffed type, X-Content-Type-Options: nosniff and Content-Disposition: attachment (inline for images)',
  })
  async content(
    @CurrentScope() scope: Scope,
    @Param('fileId') id: string,
    @Res() res: Response,
  ): Promise<void> {
    const { file, body } = await this.files.content(scope, id);
    await serve(res, file, body);
  }

  @Post(':fileId/url')
  @HttpCode(200)
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      'A short-lived signed URL of the file’s bytes {ttlSeconds?} (default FILES_SIGNED_URL_TTL_SECONDS): {url, expiresAt}. GET it with no credential (a browser’s <img src>) until it expires',
  })
  async url(
    @CurrentScope() scope: Scope,
    @Param('fileId') id: string,
    @Body() body: FileUrlDto,
  ): Promise<FileUrlView> {
    const file = await this.files.get(scope, id);
    const signed = this.signer.sign(file.id, body.ttlSeconds ?? this.config.files.signedUrlTtlSeconds);
    return { url: signed.url, expiresAt: signed.expiresAt.toISOString() };
  }

  @Get(':fileId/signed')
  @Public()
  @ApiProduces('application/octet-stream')
  @ApiOperation({
    summary:
      'A file’s bytes through a signed URL (POST /v1/files/:fileId/url made it: ?expires=&signature=), with no credential; 404 once it expired, or for a signature not made for this file and expiry',
  })
  async signed(@Param('fileId') id: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    // A signed URL is taken whole or not at all: anything wrong in it answers 404, like an unknown file.
    const query = signedFileQuerySchema.safeParse(req.query);
    if (!query.success || !this.signer.verify(id, query.data.expires, query.data.signature))
      throw CanopyException.notFound('file');
    const { file, body } = await this.files.signedContent(id);
    res.setHeader('cache-control', 'private, max-age=60');
    await serve(res, file, body);
  }

  @Delete(':fileId')
  @HttpCode(204)
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      'Delete a file: answered no more from now on; its bytes are removed once no session refers to it (conversations that show it keep it until then)',
  })
  async delete(@CurrentScope() scope: Scope, @Param('fileId') id: string): Promise<void> {
    await this.files.delete(scope, id);
  }
}

async function serve(res: Response, file: FileRecord, body: Readable): Promise<void> {
  const inline = INLINE_TYPES.has(file.mediaType);
  res.status(200);
  res.setHeader('content-type', file.mediaType);
  res.setHeader('content-length', String(file.bytes));
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('content-security-policy', "default-src 'none'; sandbox");
  res.setHeader(
    'content-disposition',
    `${inline ? 'inline' : 'attachment'}; filename="${asciiName(file.name)}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
  );
  res.setHeader('etag', `"${file.sha256}"`);
  try {
    await pipeline(body, res);
  } catch {
    // The client went away, or the storage failed part way: the connection is closed; nothing else to say.
    res.destroy();
  }
}

function asciiName(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
}

function cursorOf(f: FileRecord): string {
  return Buffer.from(JSON.stringify([f.createdAt.toISOString(), f.id])).toString('base64url');
}

function parseCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    if (typeof id === 'string' && /^[0-9a-f-]{36}$/i.test(id) && !Number.isNaN(createdAt.getTime()))
      return { createdAt, id };
  } catch {
    // below
  }
  throw CanopyException.badRequest('not a cursor of this listing', { field: 'cursor' });
}
