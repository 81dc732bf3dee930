// Finding, forking, moving and expiring sessions: the SDK side of search, count, export / import (one session or
// NDJSON in bulk) and bulk delete / cancel. NDJSON is read from the response stream line by line (fetch's
// ReadableStream: Node 18+ and browsers).

import type { AnthropicExport, CanopyDocument, OpenAiExport, SessionInfo } from '@canopy/core';
import type { Http } from './http';
import type {
  BulkCancelResult,
  BulkDeleteResult,
  BulkTarget,
  ImportInput,
  ImportLineReport,
  ImportManyResult,
  SearchHit,
  SearchQuery,
  SessionFilter,
} from './catalog-types';
import type { Page } from './types';

/** What an export answers, by format. */
export interface ExportByFormat {
  canopy: CanopyDocument;
  openai: OpenAiExport;
  anthropic: AnthropicExport;
  markdown: string;
}

type Query = Record<string, string | number | boolean | undefined | null>;

/** The filter as query parameters; metadataAny values are repeated parameters (see queryString). */
export function filterQuery(filter: SessionFilter): { query: Query; repeated: Array<[string, string]> } {
  const { metadata, metadataAny, status, createdAfter, createdBefore, updatedAfter, updatedBefore, ...rest } =
    filter;
  const query: Query = { ...rest };
  const repeated: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(metadata ?? {})) query[`metadata.${k}`] = v;
  for (const [k, values] of Object.entries(metadataAny ?? {}))
    for (const v of values) repeated.push([`metadataAny.${k}`, v]);
  if (status?.length) query.status = status.join(',');
  const iso = (d: string | Date | undefined) => (d instanceof Date ? d.toISOString() : d);
  Object.assign(query, {
    createdAfter: iso(createdAfter),
    createdBefore: iso(createdBefore),
    updatedAfter: iso(updatedAfter),
    updatedBefore: iso(updatedBefore),
  });
  return { query, repeated };
}

/** A path with the query, repeated parameters included. */
function withQuery(path: string, filter: SessionFilter, extra: Query = {}): string {
  const { query, repeated } = filterQuery(filter);
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...query, ...extra }))
    if (v !== undefined && v !== null) params.set(k, String(v));
  for (const [k, v] of repeated) params.append(k, v);
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/** Where a bulk export stands after this document: pass it as `cursor` to resume after it. */
export function exportCursorOf(doc: Pick<CanopyDocument, 'session'>): string {
  const json = JSON.stringify({ createdAt: doc.session.createdAt, id: doc.session.id });
  const bytes = new TextEncoder().encode(json);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The JSON values of an NDJSON response, as they arrive. */
export async function* ndjson<T>(res: Response): AsyncGenerator<T> {
  if (!res.body) return;
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) yield JSON.parse(line) as T;
    }
    if (done) break;
  }
  if (buffered.trim()) yield JSON.parse(buffered) as T;
}

export class Catalog {
  constructor(private readonly http: Http) {}

  search(q: string, query: SearchQuery = {}): Promise<Page<SearchHit>> {
    const { limit, cursor, ...filter } = query;
    return this.http.request('GET', withQuery('/v1/sessions/search', filter, { q, limit, cursor }));
  }

  async count(filter: SessionFilter & { q?: string } = {}): Promise<number> {
    const { q, ...rest } = filter;
    return (await this.http.request<{ count: number }>('GET', withQuery('/v1/sessions/count', rest, { q })))
      .count;
  }

  import(input: ImportInput): Promise<SessionInfo> {
    return this.http.request('POST', '/v1/sessions/import', { body: input });
  }

  /** Every session matching the filter as canopy documents, oldest created first (resume with exportCursorOf). */
  async *exportAll(filter: SessionFilter & { cursor?: string } = {}): AsyncGenerator<CanopyDocument> {
    const { cursor, ...rest } = filter;
    const res = await this.http.send('GET', withQuery('/v1/export', rest, { cursor }), {
      headers: { accept: 'application/x-ndjson' },
    });
    yield* ndjson<CanopyDocument>(res);
  }

  /** Imports documents (or NDJSON text), each on its own; answers a report per line. */
  async importMany(
    documents: Iterable<unknown> | string,
    options: { format?: ImportInput['format']; userId?: string; model?: string } = {},
  ): Promise<ImportManyResult> {
    const body =
      typeof documents === 'string'
        ? documents
        : [...documents].map((d) => JSON.stringify(d)).join('\n') + '\n';
    const res = await this.http.send('POST', withQuery('/v1/import', {}, options), {
      rawBody: body,
      headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson' },
    });
    const reports: ImportLineReport[] = [];
    for await (const report of ndjson<ImportLineReport>(res)) reports.push(report);
    const imported = reports.filter((r) => r.ok).length;
    return { reports, imported, failed: reports.length - imported };
  }

  deleteMany(target: BulkTarget): Promise<BulkDeleteResult> {
    return this.http.request('POST', '/v1/sessions/delete', { body: bulkBody(target) });
  }

  cancelMany(target: BulkTarget): Promise<BulkCancelResult> {
    return this.http.request('POST', '/v1/sessions/cancel', { body: bulkBody(target) });
  }
}

function bulkBody(target: BulkTarget): unknown {
  if ('ids' in target) return { ids: target.ids };
  const iso = (d: string | Date | undefined) => (d instanceof Date ? d.toISOString() : d);
  const all = target.all ? { all: true } : {};
  if (!('filter' in target))
    return { ...all, ...(target.limit !== undefined ? { limit: target.limit } : {}) };
  const f = target.filter;
  return {
    ...all,
    filter: {
      ...f,
      ...(f.createdAfter ? { createdAfter: iso(f.createdAfter) } : {}),
      ...(f.createdBefore ? { createdBefore: iso(f.createdBefore) } : {}),
      ...(f.updatedAfter ? { updatedAfter: iso(f.updatedAfter) } : {}),
      ...(f.updatedBefore ? { updatedBefore: iso(f.updatedBefore) } : {}),
    },
    ...(target.limit !== undefined ? { limit: target.limit } : {}),
  };
}
