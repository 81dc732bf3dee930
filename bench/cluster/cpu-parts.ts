// The cluster bench's CPU per delivered event split by part of the deployment (its workers, apis, Redis, Postgres),
// so a ratio against the baseline relay says where it is lost: Postgres is work per run (the runs' records and
// commits, which the relay does not make), the workers and apis per event and per run.

/** The parts of a deployment, and which of the bench's processes make each. */
export const DEPLOYMENT_PARTS = [
  { part: 'workers', process: /^worker-/ },
  { part: 'apis', process: /^api-/ },
  { part: 'redis', process: /^redis$/ },
  { part: 'postgres', process: /^postgres$/ },
] as const;

export type DeploymentPart = (typeof DEPLOYMENT_PARTS)[number]['part'];

/**
 * CPU per delivered event by part (ms), from each process's CPU over the phase (% of one core) and the
 * deployment's whole CPU per event: a part's share of the deployment's CPU times the whole. Processes of no part
 * (the bench, the machine's others) count in none. All zero when the deployment used no CPU.
 */
export function cpuPerEventByPart(
  cpuPct: Readonly<Record<string, number>>,
  cpuMsPerEvent: number,
): Record<DeploymentPart, number> {
  const byPart = { workers: 0, apis: 0, redis: 0, postgres: 0 };
  let deployment = 0;
  for (const [name, pct] of Object.entries(cpuPct)) {
    const part = DEPLOYMENT_PARTS.find((p) => p.process.test(name))?.part;
    if (part === undefined) continue;
    byPart[part] += pct;
    deployment += pct;
  }
  for (const { part } of DEPLOYMENT_PARTS) {
    byPart[part] = deployment > 0 ? (byPart[part] / deployment) * cpuMsPerEvent : 0;
  }
  return byPart;
}

/**
 * One line comparing a deployment's CPU per event by part with the baseline's: each part in µs, and what Postgres
 * alone weighs against the baseline's whole deployment (the share no work per event could win back).
 */
export function describeCpuByPart(
  canopy: Readonly<Record<DeploymentPart, number>>,
  baseline: Readonly<Record<DeploymentPart, number>>,
): string {
  const us = (ms: number) => (ms * 1000).toFixed(1);
  const total = (parts: Readonly<Record<DeploymentPart, number>>) =>
    DEPLOYMENT_PARTS.reduce((sum, { part }) => sum + parts[part], 0);
  const list = (parts: Readonly<Record<DeploymentPart, number>>) =>
    DEPLOYMENT_PARTS.filter(({ part }) => part !== 'postgres' || parts.postgres > 0)
      .map(({ part }) => `${part} ${us(parts[part])}`)
      .join(', ');
  const whole = total(baseline);
  const ratio = (ms: number) => (whole > 0 ? `${(ms / whole).toFixed(2)}x` : '-');
  return (
    `canopy ${list(canopy)} (${us(total(canopy))}); baseline ${list(baseline)} (${us(whole)}). ` +
    `Postgres alone is ${ratio(canopy.postgres)} the baseline's whole deployment; Canopy without it ` +
    `${ratio(total(canopy) - canopy.postgres)}`
  );
}

/** Whether a process's CPU is the deployment's (its apis, workers, Redis, Postgres; not the bench's, not the rest). */
export function inDeployment(processName: string): boolean {
  return DEPLOYMENT_PARTS.some((p) => p.process.test(processName));
}
