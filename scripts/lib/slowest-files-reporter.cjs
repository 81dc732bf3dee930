// A jest reporter that prints, after the run, the ten test files that took longest (wall time from their start to
// their end, with their project), so the suite's time has names on it; every file's time goes to
// test-artifacts/test-times.json.

/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS module: jest loads reporters with require() */
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
/* eslint-enable @typescript-eslint/no-require-imports */

const SHOWN = 10;

class SlowestFilesReporter {
  onRunComplete(_contexts, results) {
    const files = results.testResults
      .map((r) => ({
        path: r.testFilePath.replace(`${process.cwd()}/`, ''),
        project: r.displayName?.name ?? '',
        ms: r.perfStats.end - r.perfStats.start,
      }))
      .filter((f) => Number.isFinite(f.ms) && f.ms > 0)
      .sort((a, b) => b.ms - a.ms);
    if (files.length === 0) return;
    const dir = join(process.cwd(), 'test-artifacts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'test-times.json'), `${JSON.stringify(files, null, 1)}\n`);
    files.splice(SHOWN);
    const wall = (Date.now() - results.startTime) / 1000;
    const lines = files.map(
      (f) => `  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.project.padEnd(11)} ${f.path}`,
    );
    process.stderr.write(
      `\nThe ${files.length} slowest test files (the run took ${wall.toFixed(0)} s):\n${lines.join('\n')}\n`,
    );
  }
}

module.exports = SlowestFilesReporter;
