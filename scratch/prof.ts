import { readdirSync } from 'node:fs';
import { summariseCpuProfile } from '../bench/cpu-profile';
const dir = process.argv[2]!;
for (const f of readdirSync(dir)) {
  const s = summariseCpuProfile(`${dir}/${f}`, Number(process.argv[3] ?? 0), 40);
  console.log(f, 'busy', s.busyPercent.toFixed(1));
  for (const o of s.owners.slice(0, 15)) console.log('  owner', o.percent.toFixed(1), o.name);
  for (const o of s.functions.slice(0, 40)) console.log('  fn', o.percent.toFixed(1), o.name);
}
