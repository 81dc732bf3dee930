// docs/ stays true to the code: the generated sections of docs/api.md and docs/configuration.md (routes with their
// access, schemas, event types, error codes, configuration variables; scripts/lib/docs-sections.ts) are what
// `npm run docs` renders from the running app, and each route, event type, error code and config variable appears.
// Every relative link of the README and of docs/ leads to a file of the repository.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchOpenApiDocument, routeAccess } from '../../../scripts/lib/docs-app';
import { docsSubjects, renderDocs, ROOT, type DocsInputs } from '../../../scripts/lib/docs-sections';
import { startTestApp, type TestApp } from './support/test-app';

const FIX = 'run `npm run docs` and commit docs/';

let t: TestApp;
let inputs: DocsInputs;

beforeAll(async () => {
  t = await startTestApp();
  inputs = { openapi: await fetchOpenApiDocument(t.url), access: routeAccess(t.app) };
});

afterAll(async () => {
  await t?.close();
});

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The text of a generated section (empty when its markers are missing). */
function section(text: string, name: string): string {
  const start = text.indexOf(`<!-- generated:${name} -->`);
  const end = text.indexOf(`<!-- /generated:${name} -->`);
  return start >= 0 && end > start ? text.slice(start, end) : '';
}

describe('docs/', () => {
  it('knows who may call every route', () => {
    const routes = docsSubjects(inputs).routes;
    expect(routes).toEqual(
      expect.arrayContaining(['GET /healthz', 'POST /v1/sessions/{id}/prompt', 'GET /v1/ws']),
    );
    const unknown = routes.filter((r) => !inputs.access.has(r));
    expect(unknown).toEqual([]);
    // Read from the metadata of libs/auth's decorators (the keys are copied in scripts/lib/docs-app.ts): a renamed
    // key would make every route look like the default level.
    expect(inputs.access.get('GET /healthz')).toEqual({ level: 'public', queryToken: false });
    expect(inputs.access.get('POST /v1/admin/tenants')).toEqual({ level: 'admin', queryToken: false });
    expect(inputs.access.get('POST /v1/tokens')).toEqual({ level: 'tenant', queryToken: false });
    expect(inputs.access.get('GET /v1/sessions/{id}/events')).toEqual({ level: 'member', queryToken: true });
  });

  it('documents every route, event type, error code and configuration variable', () => {
    const subjects = docsSubjects(inputs);
    const api = read('docs/api.md');
    const configuration = read('docs/configuration.md');
    const lacking = (kind: string, names: string[], text: string, entry: (name: string) => string) =>
      names.filter((n) => !text.includes(entry(n))).map((n) => `${kind} ${n}`);
    const row = (name: string) => `| \`${name}\``;
    const missing = [
      ...lacking('route', subjects.routes, section(api, 'routes'), (r) => `#### \`${r}\``),
      ...lacking('session event', subjects.sessionEvents, section(api, 'session-events'), row),
      ...lacking('activity event', subjects.activityEvents, section(api, 'activity-events'), row),
      ...lacking('error code', subjects.errorCodes, section(api, 'error-codes'), row),
      ...lacking('variable', subjects.configVariables, section(configuration, 'config'), row),
    ];
    if (missing.length) throw new Error(`docs/ lacks ${missing.join(', ')}: ${FIX}`);
  });

  it('holds the generated sections as the code renders them now', async () => {
    const stale = (await renderDocs(inputs)).filter((f) => f.current !== f.expected).map((f) => f.file);
    if (stale.length) throw new Error(`${stale.join(' and ')} out of date with the code: ${FIX}`);
  });

  it('links only documents that exist in the repository', () => {
    const broken: string[] = [];
    const docs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    expect(docs.length).toBeGreaterThan(10);
    for (const file of ['README.md', ...docs.map((f) => `docs/${f}`)]) {
      for (const [, target] of read(file).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // http(s), mailto
        if (/^<.*>$/.test(target!)) continue; // a placeholder in a format's description (`[name](<uri>)`)
        const path = join(ROOT, file, '..', target!);
        try {
          readFileSync(path.endsWith('/') ? join(path, 'README.md') : path);
        } catch {
          broken.push(`${file} → ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
