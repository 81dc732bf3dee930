// One tenant, as the admin manages it: rename (a taken name is refused), disable or enable (a disabled tenant's
// credentials answer 403 and its runs in flight were cancelled), its usage of the last 30 days, its quotas with
// their usage in the current period (set, replace, remove; a storage quota's limit and usage in bytes, shown with a
// binary unit, entered in one), and its API keys (create: shown once; revoke).

import { useCallback, useEffect, useState, type FormEvent } from 'react';
import {
  isCanopyError,
  type ApiKeyInfo,
  type Canopy,
  type QuotaInput,
  type Quotas,
  type TenantDetail as Tenant,
} from '@canopy/client';
import { BYTE_UNITS, byteSize, bytesOf, exactBytes, sizeWithBytes, type ByteUnit } from './byte-size';
import { dateTime, errorText } from './format';
import { OnceKey } from './once-key';

const METRICS: QuotaInput['metric'][] = ['tokens', 'runs', 'cost', 'storage'];
const METRIC_LABELS: Record<QuotaInput['metric'], string> = {
  tokens: 'tokens',
  runs: 'runs',
  cost: 'USD',
  storage: 'storage',
};
const PERIODS: QuotaInput['period'][] = ['day', 'month'];

/** A tenant's usage summed over a window. */
export interface UsageTotals {
  runs: number;
  totalTokens: number;
  totalCost: number;
}

/** What a refused tenant name says: the name is taken (names compare without case), or the API's own words. */
export function nameError(err: unknown, name: string): string {
  return isCanopyError(err, 'tenant_name_taken')
    ? `A tenant named “${name}” already exists (names are compared without regard to case).`
    : errorText(err);
}

interface Loaded {
  tenant: Tenant;
  keys: ApiKeyInfo[];
  quotas: Quotas;
}

export function TenantDetail({
  canopy,
  tenantId,
  usage,
  onChanged,
}: {
  canopy: Canopy;
  tenantId: string;
  usage: UsageTotals | null;
  /** Called after a change the tenant list shows (name, state). */
  onChanged: () => void;
}) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notFound, setNotFound] = useState(false);
  /** The outcome of the last action (a refusal), shown until the next one. */
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    try {
      const [tenant, keys, quotas] = await Promise.all([
        canopy.admin.getTenant(tenantId),
        canopy.admin.listKeys(tenantId),
        canopy.admin.getQuotas(tenantId),
      ]);
      setLoaded({ tenant, keys, quotas });
      setError(null);
    } catch (err) {
      if (isCanopyError(err, 'not_found')) setNotFound(true);
      else setError(errorText(err));
    }
  }, [canopy, tenantId]);
  useEffect(() => void load(), [load]);

  /** Runs an action, then reloads; its refusal is shown (and nothing is reloaded). */
  const act = async (action: () => Promise<unknown>, refusal = errorText): Promise<boolean> => {
    setBusy(true);
    setActionError(null);
    try {
      await action();
      await load();
      return true;
    } catch (err) {
      setActionError(refusal(err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  if (notFound) {
    return (
      <>
        <h2 id="tenant-title">Tenant</h2>
        <p className="error" data-testid="tenant-not-found">
          No tenant has the id {tenantId}.
        </p>
      </>
    );
  }
  if (!loaded) {
    return (
      <>
        <h2 id="tenant-title">Tenant</h2>
        {error ? (
          <div className="error" role="alert" data-testid="tenant-error">
            Could not load the tenant: {error}{' '}
            <button type="button" onClick={() => void load()}>
              Try again
            </button>
          </div>
        ) : (
          <p className="muted" data-testid="tenant-loading">
            Loading the tenant…
          </p>
        )}
      </>
    );
  }

  const { tenant, keys, quotas } = loaded;
  const setDisabled = (disabled: boolean) =>
    act(async () => {
      await canopy.admin.updateTenant(tenantId, { disabled });
      onChanged();
    });

  return (
    <div data-testid="tenant-detail" data-tenant-id={tenant.id} data-disabled={tenant.disabled}>
      <h2 id="tenant-title" data-testid="tenant-detail-name">
        {tenant.name}
      </h2>
      <p className="hint">
        Created {dateTime(tenant.createdAt)} · id <code>{tenant.id}</code>
      </p>
      {tenant.disabled ? (
        <div className="banner-disabled" role="status" data-testid="tenant-disabled">
          <p>
            Disabled since {dateTime(tenant.disabledAt!)}: its keys and user tokens answer 403
            tenant_disabled, and its runs in flight were cancelled.
          </p>
          <button
            type="button"
            disabled={busy}
            onClick={() => void setDisabled(false)}
            data-testid="enable-tenant"
          >
            Enable
          </button>
        </div>
      ) : (
        <p>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => void setDisabled(true)}
            data-testid="disable-tenant"
          >
            Disable the tenant
          </button>{' '}
          <span className="hint">Cancels its runs in flight; its credentials then answer 403.</span>
        </p>
      )}
      {actionError && (
        <p className="error" role="alert" data-testid="tenant-action-error">
          {actionError}
        </p>
      )}

      <Rename
        current={tenant.name}
        busy={busy}
        onRename={(name) =>
          act(
            async () => {
              await canopy.admin.updateTenant(tenantId, { name });
              onChanged();
            },
            (err) => nameError(err, name),
          )
        }
      />

      <h3>Usage, last 30 days</h3>
      <p data-testid="tenant-usage">
        {usage
          ? `${usage.runs} runs · ${usage.totalTokens} tokens · ${usage.totalCost.toFixed(4)} USD`
          : 'No runs.'}
      </p>

      <QuotaSection
        quotas={quotas}
        busy={busy}
        onSet={(next) => act(() => canopy.admin.setQuotas(tenantId, next))}
      />

      <KeySection
        keys={keys}
        busy={busy}
        onCreate={async (name) => {
          let created: { apiKey: string } | null = null;
          await act(async () => {
            created = await canopy.admin.createKey(tenantId, name || undefined);
          });
          return created;
        }}
        onRevoke={(keyId) => act(() => canopy.admin.deleteKey(keyId))}
      />
    </div>
  );
}

function Rename({
  current,
  busy,
  onRename,
}: {
  current: string;
  busy: boolean;
  onRename: (name: string) => Promise<boolean>;
}) {
  const [name, setName] = useState(current);
  useEffect(() => setName(current), [current]);
  const wanted = name.trim();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void onRename(wanted);
  };
  return (
    <form className="inline-form" onSubmit={submit} aria-label="Rename the tenant">
      <label htmlFor="tenant-rename">Name</label>
      <input
        id="tenant-rename"
        value={name}
        maxLength={200}
        onChange={(e) => setName(e.target.value)}
        data-testid="tenant-rename-input"
      />
      <button type="submit" disabled={busy || !wanted || wanted === current} data-testid="tenant-rename">
        Rename
      </button>
    </form>
  );
}

/** What a quota's limit reads as: "1000 tokens a day", "1 MiB stored (1,048,576 bytes)". */
function quotaLabel(q: QuotaInput): string {
  if (q.metric === 'storage')
    return q.limit < 1024
      ? `${exactBytes(q.limit)} stored`
      : `${byteSize(q.limit)} stored (${exactBytes(q.limit)})`;
  return `${q.limit} ${q.metric} a ${q.period}`;
}

function QuotaSection({
  quotas,
  busy,
  onSet,
}: {
  quotas: Quotas;
  busy: boolean;
  onSet: (quotas: QuotaInput[]) => Promise<boolean>;
}) {
  const [metric, setMetric] = useState<QuotaInput['metric']>('tokens');
  const [period, setPeriod] = useState<QuotaInput['period']>('day');
  const [unit, setUnit] = useState<ByteUnit>('MiB');
  const [limit, setLimit] = useState('');
  /** A change of this section's on its way (the page's other actions only disable it). */
  const [saving, setSaving] = useState(false);
  const save = async (next: QuotaInput[]): Promise<boolean> => {
    setSaving(true);
    try {
      return await onSet(next);
    } finally {
      setSaving(false);
    }
  };
  const current: QuotaInput[] = quotas.tenant.map(({ metric: m, period: p, limit: l }) => ({
    metric: m,
    period: p,
    limit: l,
  }));
  const storage = metric === 'storage';
  const value = storage ? bytesOf(limit, unit) : Number(limit);
  const valid = value !== null && limit.trim() !== '' && Number.isFinite(value) && value > 0;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!valid || value === null) return;
    // One quota per metric and period: a new limit replaces the old one. Stored bytes do not reset, so a tenant
    // has one storage quota (its period, which the API asks for, only names when GET /v1/quotas reports a reset).
    const next: QuotaInput[] = [
      ...current.filter((q) => q.metric !== metric || (!storage && q.period !== period)),
      { metric, period: storage ? 'month' : period, limit: value },
    ];
    if (await save(next)) setLimit('');
  };

  return (
    <>
      <h3 id="quotas-title">Quotas</h3>
      {quotas.tenant.length === 0 ? (
        <p className="muted" data-testid="quotas-empty">
          No quota: its runs and stored files are not limited.
        </p>
      ) : (
        <div className="table-wrap">
          <table aria-labelledby="quotas-title" data-testid="quota-table">
            <thead>
              <tr>
                <th scope="col">Quota</th>
                <th scope="col">Used</th>
                <th scope="col" className="optional">
                  Resets
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {quotas.tenant.map((q) => (
                <tr
                  key={`${q.metric}-${q.period}`}
                  data-testid="quota-row"
                  data-metric={q.metric}
                  data-period={q.period}
                >
                  <td data-testid="quota-limit">{quotaLabel(q)}</td>
                  <td data-testid="quota-usage">
                    {q.metric === 'storage' ? sizeWithBytes(q.usage) : q.usage}
                  </td>
                  <td className="optional">
                    {q.metric === 'storage' ? 'never (bytes stored now)' : dateTime(q.resetsAt)}
                  </td>
                  <td>
                    <button
                      type="button"
                      className="link"
                      disabled={busy}
                      aria-label={`Remove the quota of ${quotaLabel(q)}`}
                      onClick={() =>
                        void save(current.filter((c) => c.metric !== q.metric || c.period !== q.period))
                      }
                      data-testid="quota-remove"
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form
        className="inline-form"
        onSubmit={(e) => void submit(e)}
        aria-label="Set a quota"
        aria-busy={saving}
      >
        <label htmlFor="quota-limit">Limit</label>
        <input
          id="quota-limit"
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
          aria-describedby={storage ? 'quota-storage-hint' : undefined}
          data-testid="quota-limit-input"
        />
        {storage && (
          <>
            <label htmlFor="quota-unit" className="visually-hidden">
              Unit
            </label>
            <select
              id="quota-unit"
              value={unit}
              onChange={(e) => setUnit(e.target.value as ByteUnit)}
              data-testid="quota-unit"
            >
              {BYTE_UNITS.map((u) => (
                <option key={u.unit} value={u.unit}>
                  {u.unit}
                </option>
              ))}
            </select>
          </>
        )}
        <label htmlFor="quota-metric" className="visually-hidden">
          Metric
        </label>
        <select
          id="quota-metric"
          value={metric}
          onChange={(e) => setMetric(e.target.value as QuotaInput['metric'])}
          data-testid="quota-metric"
        >
          {METRICS.map((m) => (
            <option key={m} value={m}>
              {METRIC_LABELS[m]}
            </option>
          ))}
        </select>
        {storage ? (
          <span className="hint" id="quota-storage-hint" data-testid="quota-storage-hint">
            of files stored at any moment
            {value !== null && valid ? ` (${exactBytes(value)})` : ''}
          </span>
        ) : (
          <>
            <label htmlFor="quota-period" className="visually-hidden">
              Period
            </label>
            <select
              id="quota-period"
              value={period}
              onChange={(e) => setPeriod(e.target.value as QuotaInput['period'])}
              data-testid="quota-period"
            >
              {PERIODS.map((p) => (
                <option key={p} value={p}>
                  a {p}
                </option>
              ))}
            </select>
          </>
        )}
        <button type="submit" disabled={busy || !valid} data-testid="quota-set">
          {saving ? 'Saving…' : 'Set quota'}
        </button>
      </form>
    </>
  );
}

function KeySection({
  keys,
  busy,
  onCreate,
  onRevoke,
}: {
  keys: ApiKeyInfo[];
  busy: boolean;
  onCreate: (name: string) => Promise<{ apiKey: string } | null>;
  onRevoke: (keyId: string) => Promise<boolean>;
}) {
  const [name, setName] = useState('');
  const [shown, setShown] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const created = await onCreate(name.trim());
    if (created) {
      setShown(created.apiKey);
      setName('');
    }
  };

  return (
    <>
      <h3 id="keys-title">API keys</h3>
      <form className="inline-form" onSubmit={(e) => void submit(e)} aria-label="Create an API key">
        <label htmlFor="key-name">Key name</label>
        <input
          id="key-name"
          value={name}
          maxLength={100}
          placeholder="optional"
          onChange={(e) => setName(e.target.value)}
          data-testid="key-name"
        />
        <button type="submit" disabled={busy} data-testid="create-key">
          Create key
        </button>
      </form>
      {shown && <OnceKey title="The new API key:" apiKey={shown} onDone={() => setShown(null)} />}
      {keys.length === 0 ? (
        <p className="muted">No keys.</p>
      ) : (
        <div className="table-wrap">
          <table aria-labelledby="keys-title" data-testid="key-table">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col" className="optional">
                  Created
                </th>
                <th scope="col" className="optional">
                  Last used
                </th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-testid="key-row" data-key-id={k.id} data-revoked={k.revoked}>
                  <td>
                    <span data-testid="key-label">{k.name ?? 'unnamed'}</span> <code>{k.prefix}…</code>
                  </td>
                  <td className="optional">{dateTime(k.createdAt)}</td>
                  <td className="optional">{k.lastUsedAt ? dateTime(k.lastUsedAt) : 'never'}</td>
                  <td>
                    {k.revoked ? (
                      <span className="status status-missing" data-testid="key-state">
                        revoked
                      </span>
                    ) : (
                      <button
                        type="button"
                        className="link"
                        disabled={busy}
                        aria-label={`Revoke the key ${k.name ?? ''} ${k.prefix}`.replace(/\s+/g, ' ')}
                        onClick={() => void onRevoke(k.id)}
                        data-testid="key-revoke"
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
