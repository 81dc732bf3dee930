// `npm run bench`: runs every benchmark section and prints its table. Arguments pick sections by name
// (`npm run bench -- core`); none runs them all. Add a section (cluster, store ...) to SECTIONS.

import { cpus, totalmem } from 'node:os';

import { runCoreBench } from './core.bench';
import { printReports, type BenchReport } from './report';

interface Section {
  /** What the command line selects it by. */
  name: string;
  title: string;
  run: () => Promise<BenchReport[]>;
}

const SECTIONS: Section[] = [{ name: 'core', title: 'Canopy core', run: runCoreBench }];

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const unknown = wanted.filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown bench section(s): ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`,
    );
  }
  const sections = wanted.length === 0 ? SECTIONS : SECTIONS.filter((s) => wanted.includes(s.name));

  printMachine();
  for (const section of sections) {
    const started = performance.now();
    const reports = await section.run();
    printReports(section.title, reports);
    console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }
}

function printMachine(): void {
  const cpuList = cpus();
  const model = cpuList[0]?.model.trim() ?? 'unknown CPU';
  const gc = typeof (globalThis as { gc?: unknown }).gc === 'function' ? ', gc exposed' : '';
  console.log(`Machine: node ${process.version} (${process.platform}/${process.arch}${gc})`);
  console.log(`CPU:     ${model}, ${cpuList.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
