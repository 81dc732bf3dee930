// A gateway in front of the others that turns stored-file attachments into what a provider is sent: an image or a
// PDF as the file's bytes (the AI SDK's image and file parts, message-mapping.ts), a text file as its text up to
// FILES_INLINE_TEXT_MAX_BYTES (marked when cut), and a file the model cannot take, or one no longer stored, as a
// line of text saying so. Messages keep only the file's id; its bytes are read here, per call, from the storage.

import type { Block, Message } from '@canopy/core';
import type { FileRecord, FilesService } from '@canopy/store';
import {
  failedStream,
  type ModelCheckContext,
  type ModelGateway,
  type ModelRequest,
  type ModelStreamPart,
} from '../model/model-gateway.port';
import { attachmentDelivery } from './attachment-support';

export class FileAttachmentsGateway implements ModelGateway {
  constructor(
    private readonly inner: ModelGateway,
    private readonly files: FilesService,
    private readonly options: { inlineTextMaxBytes: number },
  ) {}

  check(model: string, context?: ModelCheckContext): string | null {
    return this.inner.check(model, context);
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    if (!request.tenantId || !request.messages.some(hasFile)) return this.inner.stream(request);
    return this.withFiles(request, request.tenantId);
  }

  private async *withFiles(request: ModelRequest, tenantId: string): AsyncGenerator<ModelStreamPart> {
    let messages: Message[];
    try {
      messages = await this.resolve(request.model, tenantId, request.messages);
    } catch (err) {
      yield* failedStream(err as Error);
      return;
    }
    yield* this.inner.stream({ ...request, messages });
  }

  private async resolve(model: string, tenantId: string, messages: readonly Message[]): Promise<Message[]> {
    const ids = new Set<string>();
    for (const m of messages)
      for (const b of m.content) if (b.type === 'attachment' && b.fileId) ids.add(b.fileId);
    const files = new Map((await this.files.forSession(tenantId, [...ids])).map((f) => [f.id, f]));
    const contents = new Map<string, Block>();
    for (const [id, file] of files) contents.set(id, await this.partOf(model, file));
    return messages.map((m) =>
      m.content.some((b) => b.type === 'attachment' && b.fileId !== undefined)
        ? {
            ...m,
            content: m.content.map((b) => {
              if (b.type !== 'attachment' || b.fileId === undefined) return b;
              return (
                contents.get(b.fileId) ?? {
                  type: 'text',
                  text: `[attachment ${b.name ?? b.fileId} (${b.mediaType}): no longer stored]`,
                }
              );
            }),
          }
        : m,
    );
  }

  private async partOf(model: string, file: FileRecord): Promise<Block> {
    switch (attachmentDelivery(model, file.mediaType)) {
      case 'file':
        return {
          type: 'attachment',
          mediaType: file.mediaType,
          name: file.name,
          data: (await this.files.bytesOf(file)).toString('base64'),
        };
      case 'text': {
        const max = this.options.inlineTextMaxBytes;
        const head = await this.files.headOf(file, max);
        // A character cut at the limit is dropped rather than sent broken.
        const text = new TextDecoder('utf-8').decode(head).replace(/\uFFFD$/, '');
        const cut = file.bytes > max ? `\n[cut at ${max} of ${file.bytes} bytes]` : '';
        return {
          type: 'text',
          text: `<file name="${file.name}" type="${file.mediaType}">\n${text}${cut}\n</file>`,
        };
      }
      default:
        return {
          type: 'text',
          text: `[attachment ${file.name} (${file.mediaType}): this model cannot take it]`,
        };
    }
  }
}

function hasFile(m: Message): boolean {
  return m.content.some((b) => b.type === 'attachment' && b.fileId !== undefined);
}
