// The meter in a process the kernel stops (SIGSTOP) for a while, as a busy machine leaves a process without a core:
// its loop is late by the whole stop, and none of it counts as blocked.

import { spawn } from 'node:child_process';
import { join } from 'node:path';

const STOPPED_MS = 400;

it('does not count the time the process waited for a core', async () => {
  const meter = join(__dirname, 'loop-blocking.ts');
  const child = spawn(
    process.execPath,
    [
      '--require',
      require.resolve('tsx/cjs'),
      '-e',
      // The child reports by itself a few ticks after its loop saw the stop: its stdin may be read before any timer
      // runs after SIGCONT, so a report asked for at once could come before the late tick was measured.
      `const { measureLoopBlocking } = require(${JSON.stringify(meter)});
       const m = measureLoopBlocking();
       let lastAt = performance.now(), maxLate = 0, ticksAfter = -1;
       const wall = setInterval(() => {
         const at = performance.now();
         maxLate = Math.max(maxLate, at - lastAt - 10);
         lastAt = at;
         if (ticksAfter < 0 && maxLate > ${STOPPED_MS * 0.8}) ticksAfter = 0;
         if (ticksAfter >= 0 && ++ticksAfter > 3) {
           clearInterval(wall);
           process.stdout.write(JSON.stringify({ ...m.stop(), maxLate }) + '\\n');
           process.exit(0);
         }
       }, 10);
       process.stdout.write('measuring\\n');`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const nextLine = () =>
    new Promise<string>((resolve) => {
      const onData = (chunk: Buffer) => {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        if (lines.length > 0) {
          child.stdout.off('data', onData);
          resolve(lines.shift()!);
        }
      };
      if (lines.length > 0) resolve(lines.shift()!);
      else child.stdout.on('data', onData);
    });
  expect(await nextLine()).toBe('measuring');
  child.kill('SIGSTOP');
  await new Promise((r) => setTimeout(r, STOPPED_MS));
  child.kill('SIGCONT');
  const figures = JSON.parse(await nextLine()) as { maxMs: number; p99Ms: number; maxLate: number };
  // The loop was late by about the whole stop, and none of it is counted as blocked.
  expect(figures.maxLate).toBeGreaterThan(STOPPED_MS * 0.8);
  expect(figures.maxMs).toBeLessThan(50);
}, 30_000);
