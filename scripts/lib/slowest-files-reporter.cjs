// A jest reporter that prints, after the run, the ten test files that took longest (wall time from their start to
// their end, with their project), so the suite's time has names on it.

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
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN);
    if (files.length === 0) return;
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
