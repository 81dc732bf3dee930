import { tenantScope } from '../libs/core/src';
import { Database, SessionCatalogStore } from '../libs/store/src';
async function main() {
  const db = new Database({ url: 'postgresql://canopy_test@127.0.0.1:5432/forkprobe', poolMax: 2, txMaxWaitMs: 5000, txTimeoutMs: 20000 } as never);
  const catalog = new SessionCatalogStore(db);
  const scope = tenantScope('11111111-1111-1111-1111-111111111111');
  for (const id of ['br', 'lin']) {
    const times: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      const r = await catalog.fork(scope, { sessionId: id });
      times.push(performance.now() - t0);
      if (!r.ok) throw new Error(r.reason);
    }
    console.log(id, times.map((t) => t.toFixed(1)).join(' '));
  }
  await db.disconnect();
}
void main();
