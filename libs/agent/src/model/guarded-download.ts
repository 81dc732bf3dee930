// Attachment URLs the model cannot take as URLs are downloaded by Canopy and sent as data. Those URLs come from
// tenants and their users, so each download goes through the SSRF guard's fetch (every connection checked, no
// redirect followed), bounded in size and ended with the run's signal.

import { DownloadError } from 'ai';

/** What the AI SDK's `experimental_download` takes: one entry per URL in the prompt, null to pass the URL on. */
type DownloadFunction = (
  requested: Array<{ url: URL; isUrlSupportedByModel: boolean }>,
) => PromiseLike<Array<{ data: Uint8Array; mediaType: string | undefined } | null>>;

/** Larger attachments are refused (the API takes inline data up to ~7.5 MB). */
export const MAX_DOWNLOAD_BYTES = 32 * 1024 * 1024;

export function guardedDownload(fetch: typeof globalThis.fetch, signal: AbortSignal): DownloadFunction {
  return (requested) =>
    Promise.all(
      requested.map(async ({ url, isUrlSupportedByModel }) => {
        if (isUrlSupportedByModel) return null;
        const text = url.toString();
        if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'data:') {
          throw new DownloadError({
            url: text,
            message: `attachment URLs are http, https or data, not ${url.protocol}`,
          });
        }
        const response = await fetch(text, { signal });
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined);
          throw new DownloadError({
            url: text,
            statusCode: response.status,
            statusText: response.statusText,
          });
        }
        return {
          data: await readBounded(response, text),
          mediaType: response.headers.get('content-type') ?? undefined,
        };
      }),
    );
}

async function readBounded(response: Response, url: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      // Leaving the loop by a throw cancels the body.
      if (size > MAX_DOWNLOAD_BYTES) {
        throw new DownloadError({ url, message: `attachment larger than ${MAX_DOWNLOAD_BYTES} bytes` });
      }
      chunks.push(chunk);
    }
  }
  const data = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    data.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return data;
}
