// The live sessions of the deployment: busy and paused first, filtered by status or title. A row opens the
// session read-only, as an observer (API keys; the admin key has no tenant to open sessions in, and sees each
// session's tenant by name).

import { useState } from 'react';
import type { LiveEntry, SessionStatus } from '@canopy/client';
import { time } from './format';
import { sessionHref } from './route';

const ORDER: Record<SessionStatus, number> = { busy: 0, paused: 1, idle: 2 };
const FILTERS = ['all', 'busy', 'paused', 'idle'] as const;
type Filter = (typeof FILTERS)[number];

export function LiveTable({
  entries,
  tenantName,
}: {
  entries: LiveEntry[] | null;
  /** The tenant's name (the admin's view of every tenant); null for an API key's own view. */
  tenantName: ((tenantId: string) => string) | null;
}) {
  const [filter, setFilter] = useState<Filter>('all');
  const [query, setQuery] = useState('');
  const all = entries ?? [];
  const needle = query.trim().toLowerCase();
  const shown = all
    .filter((e) => filter === 'all' || e.status === filter)
    .filter((e) => !needle || (e.title ?? e.id).toLowerCase().includes(needle))
    .sort((a, b) => ORDER[a.status] - ORDER[b.status] || Date.parse(b.since) - Date.parse(a.since));
  const count = (f: Filter) => (f === 'all' ? all.length : all.filter((e) => e.status === f).length);
  const openable = tenantName === null;

  return (
    <>
      <div className="filters" role="group" aria-label="Show live sessions">
        {FILTERS.map((f) => (
          <button
            key={f}
            type="button"
            aria-pressed={filter === f}
            onClick={() => setFilter(f)}
            data-testid={`live-filter-${f}`}
          >
            {f} ({count(f)})
          </button>
        ))}
        <input
          type="search"
          placeholder="Filter by title"
          aria-label="Filter live sessions by title"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          data-testid="live-search"
        />
      </div>
      <div className="table-wrap">
        <table className="live">
          <thead>
            <tr>
              {tenantName && <th>Tenant</th>}
              <th>Session</th>
              <th>Status</th>
              <th>Controllers</th>
              <th className="optional">Observers</th>
              <th className="optional">User</th>
              <th className="optional">Live since</th>
              <th className="optional">Where</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((entry) => (
              <tr
                key={`${entry.tenantId ?? ''}:${entry.id}`}
                className={openable ? 'openable' : ''}
                onClick={openable ? () => (location.hash = sessionHref(entry.id, true)) : undefined}
                data-testid="live-row"
                data-session-id={entry.id}
                data-status={entry.status}
              >
                {tenantName && <td data-testid="live-tenant">{tenantName(entry.tenantId ?? '')}</td>}
                <td>
                  {openable ? (
                    <a href={sessionHref(entry.id, true)} title="Watch it (read-only)">
                      {entry.title ?? 'Untitled session'}
                    </a>
                  ) : (
                    (entry.title ?? 'Untitled session')
                  )}
                </td>
                <td>
                  <span className={`status status-${entry.status}`} data-testid="live-status">
                    {entry.status}
                  </span>
                </td>
                <td data-testid="live-controllers">{entry.controllers}</td>
                <td className="optional" data-testid="live-observers">
                  {entry.observers}
                </td>
                <td className="optional">{entry.userId ?? '—'}</td>
                <td className="optional">{time(entry.since)}</td>
                <td className="optional muted">
                  {entry.where.api.join(', ')}
                  {entry.where.worker ? ` · worker ${entry.where.worker}` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {entries !== null && shown.length === 0 && (
        <p className="muted">
          {all.length === 0 ? 'No session is live right now.' : 'No live session matches.'}
        </p>
      )}
    </>
  );
}
