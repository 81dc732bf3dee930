// The routes of the running app as its OpenAPI document lists them, for tests generated from the route list
// (a new route shows up in them by itself), and a one-shot HTTP call that also suits SSE routes: it reads the
// status and the error body, and aborts an event stream as soon as its headers arrive instead of keeping it
// open.

/** A JSON Schema as the OpenAPI document carries it (only what generated tests look at). */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

interface OpenApiOperation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  security?: unknown[];
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface Operation {
  /** `METHOD /path/{param}`, the key tables of generated tests use. */
  key: string;
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  /** The JSON body schema ($refs resolved at the top level), when the route takes a body. */
  body: JsonSchema | null;
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

export async function fetchOpenApi(baseUrl: string): Promise<OpenApiDocument> {
  const res = await fetch(`${baseUrl}/docs/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /docs/openapi.json answered ${res.status}`);
  return (await res.json()) as OpenApiDocument;
}

/** Every operation of the document whose path starts with `prefix`, in document order. */
export function operationsOf(doc: OpenApiDocument, prefix = '/v1'): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path !== prefix && !path.startsWith(`${prefix}/`)) continue;
    for (const [verb, op] of Object.entries(item)) {
      if (!METHODS.has(verb)) continue;
      const method = verb.toUpperCase();
      const params = op.parameters ?? [];
      const schema = op.requestBody?.content?.['application/json']?.schema;
      operations.push({
        key: `${method} ${path}`,
        method,
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        body: schema ? resolve(doc, schema) : null,
      });
    }
  }
  return operations;
}

/** A schema with its `$ref` (if any) replaced by the component it names. */
export function resolve(doc: OpenApiDocument, schema: JsonSchema): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  const found = doc.components?.schemas?.[name];
  if (!found) throw new Error(`unresolvable $ref ${schema.$ref}`);
  return resolve(doc, found);
}

/** The path with every `{param}` replaced (URL-encoded); an unknown parameter is an error, not a gap. */
export function fillPath(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(String(value));
  });
}

export interface CallResult {
  status: number;
  contentType: string;
  /** Parsed JSON (or the raw text); null for an event stream, which is aborted unread. */
  body: unknown;
  stream: boolean;
}

export interface CallOptions {
  credential?: string;
  /** A body: serialised as JSON unless a string (sent as is). */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One request; an event stream answer is aborted as soon as its headers arrive. */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const controller = new AbortController();
  const { credential, body, headers = {} } = options;
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    signal: controller.signal,
    headers: {
      ...(credential !== undefined ? { authorization: `Bearer ${credential}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const contentType = res.headers.get('content-type') ?? '';
  if (contentType.startsWith('text/event-stream')) {
    controller.abort();
    return { status: res.status, contentType, body: null, stream: true };
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, contentType, body: parsed, stream: false };
}

/** The API's error body, as far as an answer has one. */
export interface ErrorBody {
  error?: { code?: unknown; message?: unknown; details?: Record<string, unknown> };
  requestId?: unknown;
}

export function errorOf(res: CallResult): ErrorBody['error'] {
  return (res.body as ErrorBody | undefined)?.error;
}

/** Why an answer is not the API's error body with this status and code (null when it is). */
export function errorMismatch(res: CallResult, status: number, code: string): string | null {
  const body = res.body as ErrorBody | undefined;
  const ok =
    res.status === status &&
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).sort().join(',') === 'error,requestId' &&
    body.error?.code === code &&
    typeof body.error.message === 'string' &&
    typeof body.requestId === 'string' &&
    body.requestId.length > 0;
  return ok ? null : `expected ${status} ${code}, got ${res.status} ${describeBody(res)}`;
}

export function describeBody(res: CallResult): string {
  if (res.stream) return '(event stream)';
  return JSON.stringify(res.body)?.slice(0, 300) ?? '(empty)';
}
