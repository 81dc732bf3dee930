// Attachments in the chat: files added to the composer (the attach button, a paste, a drop) are uploaded at once
// (POST /v1/files) and shown as a chip each — an image with its preview — until the prompt that refers to them is
// sent; a prompt's attachments in the chat show an image as itself (through a short-lived signed URL, since an
// <img> sends no credential) and any other file as a chip that opens it.

import { createContext, useContext, useEffect, useRef, useState } from 'react';
import type { AttachmentBlock, Canopy, FileView } from '@canopy/client';
import { byteSize } from './byte-size';
import { errorText } from './format';

/** The files API of the signed-in client, for the turns' attachments (null: attachments show as chips only). */
export const FilesContext = createContext<Canopy['files'] | null>(null);

/** An attachment of the composer: being uploaded, stored (its file), or refused. */
export interface PendingAttachment {
  key: number;
  name: string;
  bytes: number;
  /** A local preview of an image (an object URL), revoked when the chip goes. */
  preview: string | null;
  file: FileView | null;
  error: string | null;
}

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

/** A short badge for a file: its extension, upper case (FILE without one). */
function kindOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 && name.length - dot <= 6 ? name.slice(dot + 1).toUpperCase() : 'FILE';
}

/** The composer's attachments: add (uploads each), remove, and the blocks a prompt sends. */
export function useAttachments(files: Canopy['files'] | null) {
  const [items, setItems] = useState<PendingAttachment[]>([]);
  const next = useRef(0);
  const live = useRef(items);
  live.current = items;
  // Object URLs die with the page's chips.
  useEffect(() => () => live.current.forEach((i) => i.preview && URL.revokeObjectURL(i.preview)), []);

  const add = (list: Iterable<File>) => {
    if (!files) return;
    for (const file of list) {
      const key = next.current++;
      const preview = IMAGE.test(file.type) ? URL.createObjectURL(file) : null;
      setItems((all) => [
        ...all,
        { key, name: file.name || 'file', bytes: file.size, preview, file: null, error: null },
      ]);
      files.upload(file, { name: file.name || 'pasted' }).then(
        (stored) => setItems((all) => all.map((i) => (i.key === key ? { ...i, file: stored } : i))),
        (err: unknown) =>
          setItems((all) => all.map((i) => (i.key === key ? { ...i, error: errorText(err) } : i))),
      );
    }
  };
  const remove = (key: number) =>
    setItems((all) => {
      const gone = all.find((i) => i.key === key);
      if (gone?.preview) URL.revokeObjectURL(gone.preview);
      return all.filter((i) => i.key !== key);
    });
  const clear = () => {
    items.forEach((i) => i.preview && URL.revokeObjectURL(i.preview));
    setItems([]);
  };
  const uploading = items.some((i) => i.file === null && i.error === null);
  const blocks: AttachmentBlock[] = items.flatMap((i) =>
    i.file
      ? [{ type: 'attachment' as const, fileId: i.file.id, mediaType: i.file.mediaType, name: i.file.name }]
      : [],
  );
  return { items, add, remove, clear, uploading, blocks };
}

/** The composer's chips: each attachment, its preview or type, its state, and a button that removes it. */
export function AttachmentTray({
  items,
  onRemove,
}: {
  items: PendingAttachment[];
  onRemove: (key: number) => void;
}) {
  if (items.length === 0) return null;
  return (
    <ul className="attachment-tray" data-testid="attachment-tray" aria-label="Attachments">
      {items.map((i) => (
        <li
          key={i.key}
          className={`attachment-chip${i.error ? ' failed' : ''}`}
          data-testid="attachment-chip"
          data-state={i.error ? 'error' : i.file ? 'ready' : 'uploading'}
        >
          {i.preview ? (
            <img src={i.preview} alt="" className="attachment-thumb" data-testid="attachment-preview" />
          ) : (
            <span className="attachment-icon" aria-hidden="true">
              {kindOf(i.name)}
            </span>
          )}
          <span className="attachment-name" title={i.name}>
            {i.name}
          </span>
          <span className="muted">
            {i.error ? i.error : i.file ? byteSize(i.file.bytes) : `uploading ${byteSize(i.bytes)}…`}
          </span>
          <button
            type="button"
            className="link"
            aria-label={`Remove ${i.name}`}
            onClick={() => onRemove(i.key)}
            data-testid="attachment-remove"
          >
            ✕
          </button>
        </li>
      ))}
    </ul>
  );
}

/** A prompt's attachment in the chat: an image shown (through a signed URL), any other file as a chip. */
export function AttachmentView({ block }: { block: AttachmentBlock }) {
  const files = useContext(FilesContext);
  const [src, setSrc] = useState<string | null>(block.url ?? null);
  const image = IMAGE.test(block.mediaType);
  useEffect(() => {
    if (!image || !files || block.fileId === undefined) return;
    let cancelled = false;
    files.url(block.fileId).then(
      (signed) => !cancelled && setSrc(signed.url),
      // Deleted or out of reach: the chip stays.
      () => undefined,
    );
    return () => {
      cancelled = true;
    };
  }, [files, block.fileId, image]);
  const name = block.name ?? block.mediaType;
  if (image && src) {
    return (
      <img className="attachment-image" src={src} alt={name} title={name} data-testid="attachment-image" />
    );
  }
  const open = async () => {
    if (!files || block.fileId === undefined) return;
    const signed = await files.url(block.fileId);
    window.open(signed.url, '_blank', 'noopener');
  };
  return (
    <button
      type="button"
      className="attachment-chip in-message"
      onClick={() => void open().catch(() => undefined)}
      title={`${name} (${block.mediaType})`}
      data-testid="attachment-file"
    >
      <span className="attachment-icon" aria-hidden="true">
        {kindOf(name)}
      </span>
      <span className="attachment-name">{name}</span>
      {block.bytes !== undefined && <span className="muted">{byteSize(block.bytes)}</span>}
    </button>
  );
}
