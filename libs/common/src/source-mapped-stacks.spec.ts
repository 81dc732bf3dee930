import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import ts from 'typescript';

import { installSourceMappedStacks, originalLocation } from './source-mapped-stacks';

// A TypeScript module compiled as the build compiles it (CommonJS, a .map beside the .js), run under its real path.
const SOURCE = [
  'export function boom(n: number): never {',
  '  const label: string = `boom ${n}`;',
  '  throw new Error(label);',
  '}',
  '',
].join('\n');

describe('source-mapped stacks', () => {
  let dir: string;
  let js: string;
  let boom: (n: number) => never;
  let compiled: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'canopy-stacks-'));
    js = join(dir, 'boom.js');
    const out = ts.transpileModule(SOURCE, {
      fileName: 'boom.ts',
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, sourceMap: true },
    });
    compiled = out.outputText;
    writeFileSync(js, out.outputText);
    writeFileSync(`${js}.map`, out.sourceMapText!);
    const exports: { boom?: (n: number) => never } = {};
    (runInThisContext(`(function (exports) {${out.outputText}\n})`, { filename: js }) as (e: object) => void)(
      exports,
    );
    boom = exports.boom!;
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs fn with the formatting installed, then puts back what was there (jest's own). */
  function installedDuring<T>(fn: () => T): T {
    const saved = Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace');
    installSourceMappedStacks();
    try {
      return fn();
    } finally {
      if (saved) Object.defineProperty(Error, 'prepareStackTrace', saved);
      else delete (Error as { prepareStackTrace?: unknown }).prepareStackTrace;
    }
  }

  function stackOf(fn: () => void): string {
    return installedDuring(() => {
      try {
        fn();
      } catch (err) {
        return (err as Error).stack!;
      }
      throw new Error('did not throw');
    });
  }

  it("names the TypeScript source's line for a frame in a built file, and keeps the message", () => {
    const stack = stackOf(() => boom(7));
    const lines = stack.split('\n');
    expect(lines[0]).toBe('Error: boom 7');
    expect(lines[1]).toMatch(/^ {4}at boom \(.*[/\\]boom\.ts:3:\d+\)$/);
    expect(stack).toContain(join(dir, 'boom.ts'));
    expect(stack).not.toContain('boom.js:');
  });

  it('leaves frames without a map, in node_modules and of Node itself as V8 prints them', () => {
    const cache = new Map();
    expect(originalLocation(cache, join(dir, 'none.js'), 1, 1)).toBeNull();
    expect(originalLocation(cache, '/app/node_modules/x/index.js', 1, 1)).toBeNull();
    expect(originalLocation(cache, 'node:internal/timers', 1, 1)).toBeNull();
    // The built file's `throw` is the source's line 3, column 3.
    const lines = compiled.split('\n');
    const line = lines.findIndex((l) => l.includes('throw new Error'));
    const column = lines[line]!.indexOf('throw');
    expect(originalLocation(cache, js, line + 1, column + 1)).toBe(`${join(dir, 'boom.ts')}:3:3`);
  });

  it('formats an error without a message, and an object given to captureStackTrace, as V8 does', () => {
    const bare = stackOf(() => {
      throw new TypeError();
    });
    expect(bare.split('\n')[0]).toBe('TypeError');
    const holder: { stack?: string } = {};
    // The stack is formatted when first read.
    const captured = installedDuring(() => {
      Error.captureStackTrace(holder);
      return holder.stack!;
    });
    expect(captured.split('\n')[0]).toBe('Error');
  });
});
