// A prompt's attachments as they are taken (prompt, edit, a client tool's result): a block naming a stored file
// (`fileId`) is checked against the caller's scope and gets the file's type, name and size; a block of inline base64
// data is stored as a file and becomes such a block, so the run's input and the node rows keep an id, not the bytes.
// The session then refers to those files (they stay while it does; one stored from inline data that no committed
// message comes to refer to, its run having failed or been cancelled first, is released by the file sweep). An
// attachment the session's model cannot take answers 400 attachment_unsupported here, before any run starts. URL
// attachments pass as they are.

import { Readable } from 'node:stream';
import type { AttachmentBlock, Block, MessageContent, Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { sniffMediaType, type FileRecord, type FilesService } from '@canopy/store';
import { attachmentDelivery } from './attachment-support';

export class AttachmentIntake {
  constructor(private readonly files: FilesService) {}

  /** Whether the content has attachments this intake changes (it is left untouched otherwise). */
  static involves(content: MessageContent | undefined): content is Block[] {
    return (
      Array.isArray(content) &&
      content.some((b) => b.type === 'attachment' && (b.fileId !== undefined || b.data !== undefined))
    );
  }

  /**
   * The content with every stored or inline attachment as a file reference. `field` names the content in errors
   * (`content.2`); `model` is the session's.
   */
  async take(
    scope: Scope,
    sessionId: string,
    model: string,
    content: Block[],
    field: string,
  ): Promise<Block[]> {
    const referenced = content.flatMap((b) =>
      b.type === 'attachment' && b.fileId !== undefined ? [b.fileId] : [],
    );
    const known: Map<string, FileRecord> = referenced.length
      ? await this.files.attach(scope, sessionId, referenced)
      : new Map<string, FileRecord>();
    // Everything checked before anything is stored.
    const inline = new Map<number, { bytes: Buffer; mediaType: string; name: string }>();
    for (const [index, block] of content.entries()) {
      if (block.type !== 'attachment') continue;
      if (block.fileId !== undefined) {
        const file = known.get(block.fileId)!;
        this.assertSupported(model, file.mediaType, `${field}.${index}`);
      } else if (block.data !== undefined) {
        const bytes = decodeBase64(block.data, `${field}.${index}.data`);
        if (bytes.length > this.files.maxBytes)
          throw new CanopyException(
            'payload_too_large',
            `an attachment may be at most ${this.files.maxBytes} bytes`,
            {
              field: `${field}.${index}.data`,
            },
          );
        const name = block.name ?? 'attachment';
        const mediaType = await sniffMediaType(bytes.subarray(0, 4_100), block.mediaType, name);
        this.assertSupported(model, mediaType, `${field}.${index}`);
        inline.set(index, { bytes, mediaType, name });
      }
    }
    const out: Block[] = [];
    for (const [index, block] of content.entries()) {
      if (block.type !== 'attachment' || (block.fileId === undefined && block.data === undefined)) {
        out.push(block);
        continue;
      }
      if (block.fileId !== undefined) {
        const file = known.get(block.fileId)!;
        out.push(fileBlock(file.id, file.mediaType, block.name ?? file.name, file.bytes));
        continue;
      }
      const data = inline.get(index)!;
      const stored = await this.files.upload(scope, {
        name: data.name,
        declaredType: data.mediaType,
        length: data.bytes.length,
        body: Readable.from([data.bytes]),
        fromPrompt: true,
      });
      await this.files.attach(scope, sessionId, [stored.id]);
      out.push(fileBlock(stored.id, stored.mediaType, stored.name, stored.bytes));
    }
    return out;
  }

  private assertSupported(model: string, mediaType: string, field: string): void {
    if (attachmentDelivery(model, mediaType) !== null) return;
    throw new CanopyException(
      'attachment_unsupported',
      `the model ${model} cannot take an attachment of type ${mediaType}`,
      {
        field,
        mediaType,
        model,
      },
    );
  }
}

function fileBlock(fileId: string, mediaType: string, name: string, bytes: number): AttachmentBlock {
  return { type: 'attachment', fileId, mediaType, name, bytes };
}

function decodeBase64(data: string, field: string): Buffer {
  const clean = data.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean))
    throw CanopyException.badRequest('attachment data must be base64', { field });
  return Buffer.from(clean, clean.includes('-') || clean.includes('_') ? 'base64url' : 'base64');
}
