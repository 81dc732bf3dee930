// The admin's tenants: every tenant by name (searched, a page at a time) with its usage of the last 30 days and
// its state, a form that creates one (its first API key shown once), and the tenant opened (#/tenants/<id>):
// rename, disable or enable, its quotas and its API keys (tenant-detail.tsx).

import { useCallback, useEffect, useState, type FormEvent } from 'react';
import type { Canopy, TenantInfo, UsageReport } from '@canopy/client';
import { errorText } from './format';
import { OnceKey } from './once-key';
import { tenantHref } from './route';
import { nameError, TenantDetail, type UsageTotals } from './tenant-detail';

const PAGE = 50;

/** The admin's usage report (every tenant, by day) summed per tenant. */
function usageByTenant(report: UsageReport): Map<string, UsageTotals> {
  const totals = new Map<string, UsageTotals>();
  for (const row of report.data) {
    if (!row.tenantId) continue;
    const sum = totals.get(row.tenantId) ?? { runs: 0, totalTokens: 0, totalCost: 0 };
    sum.runs += row.runs;
    sum.totalTokens += row.totalTokens;
    sum.totalCost += row.totalCost;
    totals.set(row.tenantId, sum);
  }
  return totals;
}

export function TenantsPage({ canopy, tenantId }: { canopy: Canopy; tenantId: string | null }) {
  const [query, setQuery] = useState('');
  const [tenants, setTenants] = useState<TenantInfo[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [usage, setUsage] = useState<Map<string, UsageTotals> | null>(null);
  const [usageError, setUsageError] = useState<string | null>(null);

  const load = useCallback(
    async (q: string, cursor?: string) => {
      try {
        const page = await canopy.admin.tenantsPage({ ...(q ? { q } : {}), limit: PAGE, cursor });
        setTenants((shown) => (cursor ? [...(shown ?? []), ...page.data] : page.data));
        setNextCursor(page.nextCursor);
        setListError(null);
      } catch (err) {
        setListError(errorText(err));
      }
    },
    [canopy],
  );
  const loadUsage = useCallback(async () => {
    try {
      setUsage(usageByTenant(await canopy.usage.get({ groupBy: 'day' })));
      setUsageError(null);
    } catch (err) {
      setUsageError(errorText(err));
    }
  }, [canopy]);
  const reload = useCallback(() => void load(query.trim()), [load, query]);

  useEffect(() => {
    // A search waits for a pause in the typing.
    const timer = setTimeout(() => void load(query.trim()), query ? 250 : 0);
    return () => clearTimeout(timer);
  }, [load, query]);
  useEffect(() => void loadUsage(), [loadUsage]);

  return (
    <main className="dashboard admin-page" data-testid="tenants-page">
      <section className="panel" aria-labelledby="tenants-title">
        <h2 id="tenants-title">Tenants</h2>
        <CreateTenant canopy={canopy} onCreated={reload} />
        <div className="filters">
          <input
            type="search"
            placeholder="Search by name"
            aria-label="Search tenants by name"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            data-testid="tenant-search"
          />
        </div>
        {listError && (
          <div className="error" role="alert" data-testid="tenants-error">
            Could not load the tenants: {listError}{' '}
            <button type="button" onClick={reload} data-testid="tenants-retry">
              Try again
            </button>
          </div>
        )}
        {usageError && <p className="error">Usage is unavailable: {usageError}</p>}
        {tenants === null ? (
          !listError && (
            <p className="muted" data-testid="tenants-loading">
              Loading tenants…
            </p>
          )
        ) : tenants.length === 0 ? (
          <p className="muted" data-testid="tenants-empty">
            {query.trim()
              ? `No tenant’s name contains “${query.trim()}”.`
              : 'No tenants yet: create the first one above.'}
          </p>
        ) : (
          <TenantTable tenants={tenants} usage={usage} openId={tenantId} />
        )}
        {nextCursor && (
          <button
            type="button"
            onClick={() => void load(query.trim(), nextCursor)}
            data-testid="tenants-more"
          >
            More tenants
          </button>
        )}
      </section>
      <section className="panel" aria-labelledby="tenant-title">
        {tenantId ? (
          <TenantDetail
            key={tenantId}
            canopy={canopy}
            tenantId={tenantId}
            usage={usage?.get(tenantId) ?? null}
            onChanged={reload}
          />
        ) : (
          <>
            <h2 id="tenant-title">Tenant</h2>
            <p className="muted">
              Open a tenant to rename or disable it, set its quotas and manage its keys.
            </p>
          </>
        )}
      </section>
    </main>
  );
}

function TenantTable({
  tenants,
  usage,
  openId,
}: {
  tenants: TenantInfo[];
  usage: Map<string, UsageTotals> | null;
  openId: string | null;
}) {
  const figure = (id: string, pick: (u: UsageTotals) => string) => {
    if (!usage) return '…';
    const u = usage.get(id);
    return u ? pick(u) : '0';
  };
  return (
    <div className="table-wrap">
      <table data-testid="tenant-table">
        <caption className="visually-hidden">Tenants with their usage of the last 30 days</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">State</th>
            <th scope="col">Runs (30 d)</th>
            <th scope="col" className="optional">
              Tokens (30 d)
            </th>
            <th scope="col" className="optional">
              Cost (USD)
            </th>
          </tr>
        </thead>
        <tbody>
          {tenants.map((t) => (
            <tr
              key={t.id}
              data-testid="tenant-row"
              data-tenant-id={t.id}
              className={t.id === openId ? 'current' : ''}
            >
              <td>
                <a
                  href={tenantHref(t.id)}
                  aria-current={t.id === openId ? 'page' : undefined}
                  data-testid="tenant-name"
                >
                  {t.name}
                </a>
              </td>
              <td>
                <span className={t.disabled ? 'status status-missing' : 'status'} data-testid="tenant-state">
                  {t.disabled ? 'disabled' : 'active'}
                </span>
              </td>
              <td data-testid="tenant-runs">{figure(t.id, (u) => String(u.runs))}</td>
              <td className="optional">{figure(t.id, (u) => String(u.totalTokens))}</td>
              <td className="optional">{figure(t.id, (u) => u.totalCost.toFixed(4))}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function CreateTenant({ canopy, onCreated }: { canopy: Canopy; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ id: string; name: string; apiKey: string } | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const wanted = name.trim();
    setBusy(true);
    setError(null);
    try {
      const tenant = await canopy.admin.createTenant(wanted);
      setCreated(tenant);
      setName('');
      onCreated();
    } catch (err) {
      setError(nameError(err, wanted));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <form className="inline-form" onSubmit={(e) => void submit(e)} aria-label="Create a tenant">
        <label htmlFor="new-tenant-name">New tenant</label>
        <input
          id="new-tenant-name"
          value={name}
          maxLength={200}
          placeholder="Name"
          onChange={(e) => setName(e.target.value)}
          aria-invalid={error !== null}
          aria-describedby={error ? 'create-tenant-error' : undefined}
          data-testid="new-tenant-name"
        />
        <button type="submit" disabled={busy || !name.trim()} data-testid="create-tenant">
          {busy ? 'Creating…' : 'Create'}
        </button>
      </form>
      {error && (
        <p className="error" role="alert" id="create-tenant-error" data-testid="create-tenant-error">
          {error}
        </p>
      )}
      {created && (
        <OnceKey
          title={
            <>
              Tenant <a href={tenantHref(created.id)}>{created.name}</a> created. Its first API key:
            </>
          }
          apiKey={created.apiKey}
          onDone={() => setCreated(null)}
        />
      )}
    </>
  );
}
