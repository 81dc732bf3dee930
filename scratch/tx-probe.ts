import { spawn } from 'node:child_process';
import { Client } from 'pg';
import { createTestDatabase, adminUrl, TEST_ADMIN_KEY, TEST_JWT_SECRET, freePort } from '../libs/testing/src';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function main() {
  const db = await createTestDatabase();
  const admin = new Client({ connectionString: adminUrl() }); await admin.connect();
  await admin.query(`ALTER DATABASE ${db.name} SET log_statement = 'all'`);
  await admin.query(`ALTER DATABASE ${db.name} SET log_min_duration_statement = -1`);
  const port = await freePort();
  const proc = spawn(process.execPath, ['/work/main/dist/apps/api/apps/api/src/main.js'], { cwd: '/work/main', env: { PATH: process.env.PATH!, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', CANOPY_ADMIN_KEY: TEST_ADMIN_KEY, CANOPY_JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_TENANT: '0', MAX_CONCURRENT_RUNS_PER_TENANT: '10000', DATABASE_URL: db.url }, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  for (;;) { try { if ((await fetch(`${url}/readyz`)).status === 200) break; } catch {} await sleep(300); }
  const t = await (await fetch(`${url}/v1/admin/tenants`, { method: 'POST', headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'probe' + Date.now() }) })).json() as { apiKey: string };
  const h = { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' };
  const xacts = async () => Number((await admin.query(`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1`, [db.name])).rows[0].n);
  const mark = async (label: string) => { await sleep(1200); console.log('MARK', label, await xacts()); await admin.query(`SELECT 'MARK ${label}'`); };
  await mark('idle-start'); await sleep(5000); await mark('idle-5s');
  const s = await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers: h, body: JSON.stringify({ model: 'mock:echo' }) })).json() as { id: string };
  await mark('created');
  for (let i = 0; i < 4; i++) {
    const r = await fetch(`${url}/v1/sessions/${s.id}/prompt`, { method: 'POST', headers: h, body: JSON.stringify({ content: 'hello ' + i, wait: true }) });
    await r.text();
    await mark('prompt' + i);
  }
  proc.kill('SIGTERM'); await sleep(2000); await admin.end(); await db.drop();
  console.log('DB', db.name);
}
main().catch((e) => { console.error(e); process.exit(1); });
