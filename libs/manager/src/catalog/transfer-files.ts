// Stored files through export and import: which files a conversation's attachments refer to, the messages with a
// file's bytes in place of its id (the OpenAI and Anthropic formats carry the bytes in their image and document
// parts), and a canopy document's files stored again as the importing tenant's, its attachments changed to refer to
// the new ids.

import { Readable } from 'node:stream';
import type { AttachmentBlock, Block, Message, Scope } from '@canopy/core';
import type { FileRecord, FilesService } from '@canopy/store';
import type { PreparedImport } from './import-preparation';

/** The file ids a conversation's attachments name (tool results' included), each once. */
export function fileIdsOf(messages: readonly Message[]): string[] {
  const ids = new Set<string>();
  const visit = (b: Block | AttachmentBlock) => {
    if (b.type === 'attachment' && b.fileId !== undefined) ids.add(b.fileId);
    if (b.type === 'tool_result' && Array.isArray(b.content)) b.content.forEach(visit);
  };
  for (const m of messages) m.content.forEach(visit);
  return [...ids];
}

/** The message with each stored file's bytes as the attachment's base64 data (a file no longer stored stays named). */
export async function withFileData(
  message: Message,
  stored: readonly FileRecord[],
  files: FilesService,
): Promise<Message> {
  if (!message.content.some((b) => b.type === 'attachment' && b.fileId !== undefined)) return message;
  const byId = new Map(stored.map((f) => [f.id, f]));
  const content: Block[] = [];
  for (const b of message.content) {
    const file = b.type === 'attachment' && b.fileId !== undefined ? byId.get(b.fileId) : undefined;
    if (b.type !== 'attachment' || !file) {
      content.push(b);
      continue;
    }
    content.push({
      type: 'attachment',
      mediaType: file.mediaType,
      name: b.name ?? file.name,
      data: (await files.bytesOf(file)).toString('base64'),
    });
  }
  return { ...message, content };
}

/**
 * Stores a prepared canopy document's files as files of the scope's tenant and changes its nodes to refer to them
 * (their new ids in place of the document's, in the prepared batches). Answers the new ids. A failure removes what
 * it stored.
 */
export async function restoreFiles(
  files: FilesService,
  scope: Scope,
  prepared: PreparedImport,
): Promise<string[]> {
  const renamed = new Map<string, string>();
  try {
    for (const f of prepared.files) {
      const bytes = Buffer.from(f.data, 'base64');
      const stored = await files.upload(scope, {
        name: f.name,
        declaredType: f.mediaType,
        length: bytes.length,
        body: Readable.from([bytes]),
      });
      renamed.set(f.id, stored.id);
    }
  } catch (err) {
    await discard(files, scope, [...renamed.values()]);
    throw err;
  }
  // Ids are uuids: one can appear in the JSON nowhere but where it is that id.
  prepared.batches = prepared.batches.map((batch) => {
    let out = batch;
    for (const [from, to] of renamed) out = out.split(`"${from}"`).join(`"${to}"`);
    return out;
  });
  return [...renamed.values()];
}

/** The file ids a prepared import's nodes refer to (read off its batches' JSON), each once. */
export function referencedFileIds(prepared: PreparedImport): string[] {
  const ids = new Set<string>();
  const pattern = /"fileId":"([0-9a-fA-F-]{36})"/g;
  for (const batch of prepared.batches) for (const match of batch.matchAll(pattern)) ids.add(match[1]!);
  return [...ids];
}

/** Removes files stored for an import that failed after all. */
export async function discard(files: FilesService, scope: Scope, ids: readonly string[]): Promise<void> {
  for (const id of ids) await files.delete(scope, id).catch(() => undefined);
}
