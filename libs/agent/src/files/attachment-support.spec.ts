// Which attachments each provider is sent, and how; what a stored file counts for the context policy.

import { attachmentTokens, BYTES_PER_FILE_TOKEN, IMAGE_TOKENS } from '../context/tokens';
import { attachmentDelivery } from './attachment-support';

it('sends images to every model, PDFs where the provider takes documents, text as text, nothing else', () => {
  for (const model of [
    'anthropic:claude-sonnet-4-5',
    'openai:gpt-4.1',
    'openai-compatible:llama',
    'mock:echo',
  ])
    expect(attachmentDelivery(model, 'image/png')).toBe('file');
  expect(attachmentDelivery('anthropic:claude-sonnet-4-5', 'application/pdf')).toBe('file');
  expect(attachmentDelivery('openai:gpt-4.1', 'application/pdf')).toBe('file');
  expect(attachmentDelivery('openai-compatible:llama', 'application/pdf')).toBeNull();
  for (const type of ['text/plain', 'text/markdown', 'text/csv', 'application/json', 'text/x-python'])
    expect(attachmentDelivery('openai-compatible:llama', type)).toBe('text');
  expect(attachmentDelivery('anthropic:claude-sonnet-4-5', 'application/zip')).toBeNull();
  expect(attachmentDelivery('anthropic:claude-sonnet-4-5', 'audio/wav')).toBeNull();
  expect(attachmentDelivery('anthropic:claude-sonnet-4-5', 'image/svg+xml')).toBeNull();
  expect(attachmentDelivery('anthropic:claude-sonnet-4-5', 'image/tiff')).toBeNull();
});

it('counts a stored file for the context policy: an image as any image, another file by its size', () => {
  const file = (mediaType: string, bytes: number) =>
    ({ type: 'attachment', fileId: '6f1c2a4e-8d3b-4c5a-9e7f-0123456789ab', mediaType, bytes }) as const;
  expect(attachmentTokens(file('image/png', 5_000_000))).toBe(IMAGE_TOKENS);
  expect(attachmentTokens(file('application/pdf', 40_000))).toBe(40_000 / BYTES_PER_FILE_TOKEN);
  expect(attachmentTokens(file('text/csv', 10))).toBe(Math.ceil(10 / BYTES_PER_FILE_TOKEN));
});
