// Which attachments a model takes, by its provider and the attachment's media type: images (PNG, JPEG, GIF, WebP)
// everywhere; PDFs as documents where the provider's API takes them (Anthropic's Messages API, OpenAI's Responses
// API, the built-in mock models), not over the Chat Completions of an OpenAI-compatible server; text types (plain,
// Markdown, JSON, CSV, code) everywhere, sent as text. Anything else no model is sent.

import { isTextMediaType } from '@canopy/store';

export type AttachmentDelivery = 'file' | 'text';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const PDF_PROVIDERS = new Set(['anthropic', 'openai', 'mock']);

/** How a model ("provider:name") is sent an attachment of this type: as a file part, as text, or not at all. */
export function attachmentDelivery(model: string, mediaType: string): AttachmentDelivery | null {
  const provider = model.slice(0, Math.max(0, model.indexOf(':')));
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  if (IMAGE_TYPES.has(type)) return 'file';
  if (type === 'application/pdf') return PDF_PROVIDERS.has(provider) ? 'file' : null;
  if (isTextMediaType(type) && type !== 'image/svg+xml') return 'text';
  return null;
}
