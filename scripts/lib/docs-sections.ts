// The generated parts of docs/: rendered from the code, written between markers by `npm run docs`
// (scripts/docs.ts) and checked by apps/api/test/docs.e2e-spec.ts. Prose around the markers stays hand-written.
//
//   docs/api.md         routes (the OpenAPI document + each route's access level), schemas, session events and
//                       activity events (libs/core/src/events.ts), error codes (libs/core/src/api/error-codes.ts)
//   docs/configuration.md  configuration variables (libs/common/src/config/config.schema.ts)
//
// A section sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ts from 'typescript';
import { z } from 'zod';
import { ERROR_STATUS } from '../../libs/core/src/api/error-codes';
import { SESSION_EVENT_TYPES } from '../../libs/core/src/events';
import { envSchema } from '../../libs/common/src/config/config.schema';
import { CONFIG_NOTES } from './config-notes';

export const ROOT = resolve(__dirname, '../..');
export const DOCS_FILES = ['docs/api.md', 'docs/configuration.md'] as const;
export type DocsFile = (typeof DOCS_FILES)[number];

// ---------------------------------------------------------------------------------------------------------------
// Inputs

export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  nullable?: boolean;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  default?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

interface OpenApiOperation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: JsonSchema;
  }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: JsonSchema }> }>;
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export type AccessLevel = 'public' | 'admin' | 'tenant' | 'member' | 'operator' | 'any';

export interface RouteAccess {
  level: AccessLevel;
  /** SSE routes that also take the credential as `?token=`. */
  queryToken: boolean;
}

export interface DocsInputs {
  openapi: OpenApiDocument;
  /** `METHOD /path/{param}` → access, from the controllers' metadata. */
  access: Map<string, RouteAccess>;
}

/** What the docs must mention, each as the text the test looks for. */
export interface DocsSubjects {
  routes: string[];
  sessionEvents: string[];
  activityEvents: string[];
  errorCodes: string[];
  configVariables: string[];
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the TypeScript sources (comments and declared members the runtime does not carry)

function sourceOf(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.ES2022, true);
}

/** The JSDoc / line comments right above a node, as one line of text. */
function commentOf(node: ts.Node, source: ts.SourceFile): string {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  return ranges
    .map((r) => source.text.slice(r.pos, r.end))
    .map((c) =>
      c
        .replace(/^\/\*\*?|\*\/$/g, '')
        .split('\n')
        .map((l) => l.replace(/^\s*(\*|\/\/)\s?/, '').trim())
        .join(' '),
    )
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}

interface Member {
  name: string;
  type: string;
  comment: string;
}

function interfaceMembers(path: string, name: string): Member[] {
  const source = sourceOf(path);
  let found: Member[] | null = null;
  source.forEachChild((node) => {
    if (!ts.isInterfaceDeclaration(node) || node.name.text !== name) return;
    found = node.members.filter(ts.isPropertySignature).map((m) => ({
      name: m.name.getText(source),
      type: (m.type?.getText(source) ?? 'unknown').replace(/\s+/g, ' ').replace(/; }/g, ' }'),
      comment: commentOf(m, source),
    }));
  });
  if (!found) throw new Error(`interface ${name} not found in ${path}`);
  return found;
}

function objectLiteralMembers(path: string, variable: string): Member[] {
  const source = sourceOf(path);
  let found: Member[] | null = null;
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && node.name.getText(source) === variable && node.initializer) {
      let init: ts.Node = node.initializer;
      while (!ts.isObjectLiteralExpression(init)) {
        if (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
        else if (ts.isCallExpression(init) && init.arguments[0]) init = init.arguments[0];
        else throw new Error(`${variable} in ${path} is not an object literal`);
      }
      found = init.properties.filter(ts.isPropertyAssignment).map((p) => ({
        name: p.name.getText(source),
        type: p.initializer.getText(source),
        comment: commentOf(p, source),
      }));
      return;
    }
    node.forEachChild(visit);
  };
  visit(source);
  if (!found) throw new Error(`${variable} not found in ${path}`);
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown helpers

const code = (s: string) => (s.includes('`') ? `\`\` ${s} \`\`` : `\`${s}\``);
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const anchor = (name: string) => name.toLowerCase().replace(/[^a-z0-9_-]/g, '');
/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
const headingAnchor = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

/**
 * Free text from the code as Markdown: `<` and `>` outside code spans escaped (`metadata.<key>` is no HTML tag),
 * whitespace collapsed (line breaks kept when `lines`, for Markdown descriptions).
 */
function prose(text: string | undefined, lines = false): string {
  const escape = (line: string) =>
    line
      .split(/(`[^`]*`)/)
      .map((part, i) => (i % 2 === 1 ? part : part.replace(/[<>]/g, (c) => (c === '<' ? '&lt;' : '&gt;'))))
      .join('');
  const source = (text ?? '').trim();
  if (!lines) return escape(source.replace(/\s+/g, ' '));
  return source
    .split('\n')
    .map((line) => escape(line.trimEnd()))
    .join('\n');
}

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Routes

// A level the code adds later shows as its name until it gets words here.
const ACCESS_TEXT: Readonly<Record<string, string | undefined>> = {
  public: 'public (no credential)',
  admin: 'admin key',
  tenant: 'API key',
  member: 'API key or user token',
  operator: 'API key or admin key',
  any: 'any credential',
};

function accessText(a: RouteAccess | undefined): string {
  if (!a) return 'unknown';
  return (ACCESS_TEXT[a.level] ?? a.level) + (a.queryToken ? '; also `?token=`' : '');
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

interface Route {
  key: string;
  method: string;
  path: string;
  op: OpenApiOperation;
  access: RouteAccess | undefined;
}

function routesOf(inputs: DocsInputs): Route[] {
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(inputs.openapi.paths)) {
    for (const [verb, op] of Object.entries(item)) {
      if (!METHODS.includes(verb)) continue;
      const key = `${verb.toUpperCase()} ${path}`;
      routes.push({ key, method: verb.toUpperCase(), path, op, access: inputs.access.get(key) });
    }
  }
  // Routes a controller declares that the OpenAPI document leaves out still belong in the docs.
  for (const [key, access] of inputs.access) {
    if (routes.some((r) => r.key === key)) continue;
    const [method, path] = key.split(' ') as [string, string];
    routes.push({
      key,
      method,
      path,
      op: { tags: ['other'], summary: '(not in the OpenAPI document)' },
      access,
    });
  }
  return routes;
}

/** A JSON Schema as a short type expression; components by name (linked to their table). */
export function typeText(schema: JsonSchema | undefined, depth = 0): string {
  if (!schema) return 'unknown';
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return `[${name}](#${anchor(name)})`;
  }
  let text: string;
  const alts = schema.oneOf ?? schema.anyOf;
  if (alts) text = alts.map((s) => typeText(s, depth)).join(' | ');
  else if (schema.allOf?.length === 1) text = typeText(schema.allOf[0], depth);
  else if (schema.const !== undefined) text = JSON.stringify(schema.const);
  else if (schema.enum) text = schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  else {
    const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
    const main = types.filter((t) => t !== 'null');
    const one = main[0];
    if (one === 'array') {
      const item = typeText(schema.items, depth + 1);
      text = item.includes(' | ') ? `(${item})[]` : `${item}[]`;
    } else if (one === 'object' || (!one && schema.properties)) {
      const props = Object.entries(schema.properties ?? {});
      if (props.length === 0 || depth >= 2) text = 'object';
      else {
        const req = new Set(schema.required ?? []);
        text = `{ ${props.map(([k, v]) => `${k}${req.has(k) ? '' : '?'}: ${typeText(v, depth + 1)}`).join(', ')} }`;
      }
    } else text = main.join(' | ') || 'any';
    if (types.includes('null')) text += ' | null';
  }
  if (schema.nullable) text += ' | null';
  return text;
}

function constraints(schema: JsonSchema | undefined): string {
  if (!schema) return '';
  const parts: string[] = [];
  const range = (lo?: number, hi?: number, unit = '') =>
    lo !== undefined && hi !== undefined
      ? `${lo}–${hi}${unit}`
      : lo !== undefined
        ? `≥ ${lo}${unit}`
        : hi !== undefined
          ? `≤ ${hi}${unit}`
          : '';
  const r = range(schema.minimum, schema.maximum);
  if (r) parts.push(r);
  const l = range(schema.minLength, schema.maxLength, ' chars');
  if (l) parts.push(l);
  const i = range(schema.minItems, schema.maxItems, ' items');
  if (i) parts.push(i);
  if (schema.format) parts.push(schema.format);
  if (schema.default !== undefined) parts.push(`default ${code(JSON.stringify(schema.default))}`);
  return parts.join(', ');
}

function renderRoute(route: Route): string {
  const { op } = route;
  const lines: string[] = [`#### ${code(`${route.method} ${route.path}`)}`, ''];
  if (op.summary) lines.push(prose(op.summary), '');
  if (op.description) lines.push(prose(op.description, true), '');
  lines.push(`- Access: ${accessText(route.access)}`);
  const params = op.parameters ?? [];
  for (const where of ['path', 'query'] as const) {
    const ps = params.filter((p) => p.in === where);
    if (!ps.length) continue;
    const items = ps.map((p) => {
      const extra = [
        typeText(p.schema),
        constraints(p.schema),
        p.required && where === 'query' ? 'required' : '',
      ]
        .filter(Boolean)
        .join(', ');
      return `${code(p.name)} (${extra})${p.description ? `: ${prose(p.description)}` : ''}`;
    });
    lines.push(`- ${where === 'path' ? 'Path' : 'Query'}: ${items.join('; ')}`);
  }
  const body = op.requestBody?.content;
  if (body) {
    const parts = Object.entries(body).map(([type, c]) => `${typeText(c.schema)} (${code(type)})`);
    lines.push(`- Body${op.requestBody?.required ? '' : ' (optional)'}: ${parts.join(', ')}`);
  }
  const responses = Object.entries(op.responses ?? {});
  if (responses.length) {
    lines.push('- Responses:');
    for (const [status, r] of responses) {
      const content = Object.entries(r.content ?? {})
        .map(([type, c]) => (c.schema ? `${typeText(c.schema)} (${code(type)})` : code(type)))
        .join(', ');
      const description = prose(r.description);
      lines.push(
        `  - ${code(status)}${content ? ` ${content}` : ''}${description ? `: ${description}` : ''}`,
      );
    }
  }
  return lines.join('\n');
}

function renderRoutes(inputs: DocsInputs): string {
  const routes = routesOf(inputs);
  const tags: string[] = [];
  for (const r of routes) for (const t of r.op.tags ?? ['other']) if (!tags.includes(t)) tags.push(t);
  const out: string[] = [
    table(
      ['Method', 'Path', 'Access'],
      routes.map((r) => [
        r.method,
        `[${code(r.path)}](#${headingAnchor(`${r.method} ${r.path}`)})`,
        accessText(r.access),
      ]),
    ),
  ];
  for (const tag of tags) {
    out.push(`### ${tag}`);
    for (const r of routes.filter((x) => (x.op.tags ?? ['other'])[0] === tag)) out.push(renderRoute(r));
  }
  return out.join('\n\n');
}

function renderSchemas(inputs: DocsInputs): string {
  const schemas = Object.entries(inputs.openapi.components?.schemas ?? {});
  const out: string[] = [];
  for (const [name, schema] of schemas) {
    out.push(`#### ${name}`);
    if (schema.description) out.push(prose(schema.description));
    const props = Object.entries(schema.properties ?? {});
    if (!props.length) {
      out.push(typeText({ ...schema, $ref: undefined }));
      continue;
    }
    const req = new Set(schema.required ?? []);
    out.push(
      table(
        ['Field', 'Type', 'Required', 'Constraints', 'Description'],
        props.map(([k, v]) => [
          code(k),
          typeText(v, 1),
          req.has(k) ? 'yes' : '',
          constraints(v),
          prose(v.description),
        ]),
      ),
    );
  }
  return out.join('\n\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Events and error codes

const EVENTS_FILE = 'libs/core/src/events.ts';
const ERRORS_FILE = 'libs/core/src/api/error-codes.ts';

function renderEvents(mapName: 'SessionEventMap' | 'ActivityEventMap'): string {
  const members = interfaceMembers(EVENTS_FILE, mapName);
  return table(
    ['Type', 'Data', 'Description'],
    members.map((m) => [code(m.name), code(m.type), prose(m.comment)]),
  );
}

function renderErrorCodes(): string {
  const comments = new Map(objectLiteralMembers(ERRORS_FILE, 'ERROR_STATUS').map((m) => [m.name, m.comment]));
  return table(
    ['Code', 'HTTP status', 'Note'],
    Object.entries(ERROR_STATUS).map(([codeName, status]) => [
      code(codeName),
      String(status),
      prose(comments.get(codeName)),
    ]),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Configuration

const CONFIG_FILE = 'libs/common/src/config/config.schema.ts';

function renderConfig(): string {
  const members = objectLiteralMembers(CONFIG_FILE, 'envSchema');
  const json = z.toJSONSchema(envSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const defaults = envSchema.parse({}) as Record<string, unknown>;
  const rows = members.map((m) => {
    const schema = json.properties?.[m.name];
    let type: string;
    if (/^bool\b/.test(m.type)) type = 'boolean (true/false, 1/0, yes/no, on/off)';
    else if (/^modelList\b/.test(m.type)) type = 'comma-separated model names';
    else if (/^allowList\b/.test(m.type)) type = 'comma-separated hosts, addresses, CIDR ranges, or *';
    else if (/^modelLimits\b/.test(m.type)) type = 'comma-separated `provider:name=window[/maxOutput]`';
    else if (schema?.enum) type = schema.enum.map((v) => String(v)).join(' | ');
    else if (schema?.format === 'uri') type = 'URL';
    else {
      type = String(schema?.type ?? 'string');
      const range = constraints({
        ...schema,
        default: undefined,
        format: undefined,
        ...(schema?.minLength === 1 && schema.maxLength === undefined ? { minLength: undefined } : {}),
      });
      if (range) type += ` ${range}`;
      if (schema?.pattern && type === 'string') type += ` matching ${code(schema.pattern)}`;
    }
    const value = defaults[m.name];
    const shown =
      value === undefined
        ? 'unset'
        : Array.isArray(value)
          ? value.length
            ? code(value.join(','))
            : 'empty'
          : code(typeof value === 'string' ? value : JSON.stringify(value));
    return [code(m.name), type, shown, prose([m.comment, CONFIG_NOTES[m.name]].filter(Boolean).join(' — '))];
  });
  return table(['Variable', 'Type', 'Default', 'Description'], rows);
}

// ---------------------------------------------------------------------------------------------------------------
// The sections, and putting them into the files

export function renderSections(inputs: DocsInputs): Record<DocsFile, Record<string, string>> {
  return {
    'docs/api.md': {
      routes: renderRoutes(inputs),
      schemas: renderSchemas(inputs),
      'session-events': renderEvents('SessionEventMap'),
      'activity-events': renderEvents('ActivityEventMap'),
      'error-codes': renderErrorCodes(),
    },
    'docs/configuration.md': { config: renderConfig() },
  };
}

export function docsSubjects(inputs: DocsInputs): DocsSubjects {
  return {
    routes: routesOf(inputs).map((r) => `${r.method} ${r.path}`),
    sessionEvents: [...SESSION_EVENT_TYPES],
    activityEvents: interfaceMembers(EVENTS_FILE, 'ActivityEventMap').map((m) => m.name),
    errorCodes: Object.keys(ERROR_STATUS),
    configVariables: Object.keys(envSchema.shape),
  };
}

const SOURCE: Record<string, string> = {
  routes: 'the OpenAPI document (/docs/openapi.json) and the routes’ @Public/@Access/@QueryToken',
  schemas: 'the OpenAPI document’s components',
  'session-events': `SessionEventMap in ${EVENTS_FILE}`,
  'activity-events': `ActivityEventMap in ${EVENTS_FILE}`,
  'error-codes': `ERROR_STATUS in ${ERRORS_FILE}`,
  config: `envSchema in ${CONFIG_FILE}`,
};

/** The text with each section's markers filled; a section whose markers are missing is an error. */
export function applySections(file: string, text: string, sections: Record<string, string>): string {
  let out = text;
  for (const [name, body] of Object.entries(sections)) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const start = out.indexOf(open);
    const end = out.indexOf(close);
    if (start < 0 || end < start) throw new Error(`${file} lacks the markers ${open} ... ${close}`);
    const note = `<!-- Generated by \`npm run docs\` from ${SOURCE[name] ?? 'the code'}: edit the source, not this. -->`;
    out = `${out.slice(0, start)}${open}\n\n${note}\n\n${body}\n\n${out.slice(end)}`;
  }
  return out;
}

/** Markdown as `prettier --write` leaves it (the repository's format check runs over docs/ too). */
export async function formatMarkdown(text: string, file: string): Promise<string> {
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(join(ROOT, file))) ?? {};
  return prettier.format(text, { ...options, filepath: join(ROOT, file) });
}

/** Each docs file as it should be: its current text with the generated sections brought up to date. */
export async function renderDocs(
  inputs: DocsInputs,
  read = (file: string) => readFileSync(join(ROOT, file), 'utf8'),
) {
  const sections = renderSections(inputs);
  const result: Array<{ file: DocsFile; current: string; expected: string }> = [];
  for (const file of DOCS_FILES) {
    const current = read(file);
    const expected = await formatMarkdown(applySections(file, current, sections[file]), file);
    result.push({ file, current, expected });
  }
  return result;
}
