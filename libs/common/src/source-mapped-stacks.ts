// Stack traces that name the TypeScript sources of Canopy's own code, read from the build's source maps when a
// trace is formatted.
//
// Why not Node's --enable-source-maps: Node then reads and parses the source map of every module it loads, at
// load, and keeps them for the life of the process, node_modules' maps included (Prisma's client and rxjs ship
// theirs, with their sources inside): 15-20 MiB of the embedded api's resident memory in the HTTP bench (peak at
// 100 sessions 361 -> 346 MiB, measured with /proc/<pid>/status). Here only frames in files outside node_modules
// with a `.map` beside them are mapped, each map is read the first time one of its frames is formatted, and the
// build's maps are small (under 1 MiB together). Frames in node_modules and Node's own keep their JavaScript
// locations, as they always had without the flag.

import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, isAbsolute, resolve } from 'node:path';

/** V8's call site, which prints itself as a frame of a stack trace (@types/node leaves toString out). */
interface CallSite extends NodeJS.CallSite {
  toString(): string;
}

/** Maps read so far by generated file (null: none beside it, or unreadable). */
type MapCache = Map<string, SourceMap | null>;

/** Where a generated position came from: `file:line:column` (1-based), or null when the map does not say. */
export function originalLocation(cache: MapCache, file: string, line: number, column: number): string | null {
  if (!isAbsolute(file) || file.includes('/node_modules/')) return null;
  let map = cache.get(file);
  if (map === undefined) {
    map = null;
    try {
      map = new SourceMap(
        JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0],
      );
    } catch {
      // No map beside it (or an unreadable one): the JavaScript location stands.
    }
    cache.set(file, map);
  }
  if (!map) return null;
  const entry = map.findEntry(line - 1, column - 1) as Partial<{
    originalSource: string;
    originalLine: number;
    originalColumn: number;
  }>;
  if (
    entry.originalSource === undefined ||
    entry.originalLine === undefined ||
    entry.originalColumn === undefined
  ) {
    return null;
  }
  const source = resolve(dirname(file), entry.originalSource);
  return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
}

/** One frame as V8 prints it, its location replaced by the original one where the map has it. */
function formatFrame(cache: MapCache, site: CallSite): string {
  const text = site.toString();
  const file = site.getFileName();
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  if (!file || line === null || column === null) return text;
  const original = originalLocation(cache, file, line, column);
  if (!original) return text;
  const generated = `${file}:${line}:${column}`;
  const at = text.lastIndexOf(generated);
  return at < 0 ? text : text.slice(0, at) + original + text.slice(at + generated.length);
}

/** Installs the formatting for the process (the deployables' entry points call it first). */
export function installSourceMappedStacks(): void {
  const cache: MapCache = new Map();
  Error.prepareStackTrace = (error: unknown, sites: CallSite[]): string => {
    let header: string;
    try {
      header = Error.prototype.toString.call(error);
    } catch {
      header = 'Error';
    }
    return [header, ...sites.map((site) => `    at ${formatFrame(cache, site)}`)].join('\n');
  };
}
