import type { QuotaStatus } from '@canopy/store';
import { quotaOverview } from './quota-overview';

const status = (userId: string | null, metric: QuotaStatus['metric'], usage: number): QuotaStatus => ({
  userId,
  metric,
  period: 'day',
  limit: 100,
  usage,
  resetsAt: '2026-03-16T00:00:00.000Z',
});

describe('quotaOverview', () => {
  it('answers the tenant’s quotas, then each user’s in the order they come, without the user on each line', () => {
    const overview = quotaOverview([
      status(null, 'tokens', 5),
      status('bob', 'runs', 1),
      status(null, 'cost', 0.5),
      status('alice', 'tokens', 7),
      status('bob', 'tokens', 2),
    ]);
    expect(overview).toEqual({
      tenant: [
        { metric: 'tokens', period: 'day', limit: 100, usage: 5, resetsAt: '2026-03-16T00:00:00.000Z' },
        { metric: 'cost', period: 'day', limit: 100, usage: 0.5, resetsAt: '2026-03-16T00:00:00.000Z' },
      ],
      users: [
        {
          userId: 'bob',
          quotas: [
            { metric: 'runs', period: 'day', limit: 100, usage: 1, resetsAt: '2026-03-16T00:00:00.000Z' },
            { metric: 'tokens', period: 'day', limit: 100, usage: 2, resetsAt: '2026-03-16T00:00:00.000Z' },
          ],
        },
        {
          userId: 'alice',
          quotas: [
            { metric: 'tokens', period: 'day', limit: 100, usage: 7, resetsAt: '2026-03-16T00:00:00.000Z' },
          ],
        },
      ],
    });
  });

  it('answers empty lists for a tenant without quotas', () => {
    expect(quotaOverview([])).toEqual({ tenant: [], users: [] });
  });
});
