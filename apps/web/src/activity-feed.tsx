// The dashboard's activity feed, in words: it starts from the latest runs GET /v1/stats keeps (so a run that
// finished a minute ago is there on arrival), then adds what the live feed says as it happens. Each item names
// its session by title (and its tenant by name for the admin).

import type { ActivityEvent, RecentRun } from '@canopy/client';
import { plural, time } from './format';
import { sessionHref } from './route';

export interface FeedItem {
  key: string;
  at: number;
  type: ActivityEvent['type'];
  tenantId: string;
  sessionId: string;
  /** What happened, after the session's name. */
  text: string;
}

const KIND: Record<string, string> = {
  prompt: 'a prompt',
  branch: 'a regeneration or an edit',
  resume: 'a decision, resuming',
};
const FINISHED: Record<string, string> = {
  completed: 'completed',
  error: 'failed',
  cancelled: 'was cancelled',
};
const CLOSED: Record<string, string> = {
  close: 'closed',
  delete: 'deleted',
  idle: 'closed after being idle',
  shutdown: 'closed by a server shutdown',
};

function finishedText(status: string, tokens: number, error?: string | null): string {
  const what = FINISHED[status] ?? status;
  return `run ${what}${error ? ` (${error})` : ''}, ${plural(tokens, 'token')}`;
}

/** The recent past: each stored run as its start and, once finished, its end. */
export function itemsOfRuns(runs: RecentRun[]): FeedItem[] {
  const items: FeedItem[] = [];
  for (const r of runs) {
    const base = { tenantId: r.tenantId, sessionId: r.sessionId };
    items.push({
      ...base,
      key: `run_started:${r.runId}`,
      at: Date.parse(r.createdAt),
      type: 'run_started',
      text: `run started for ${KIND[r.kind] ?? r.kind}`,
    });
    if (r.finishedAt) {
      items.push({
        ...base,
        key: `run_finished:${r.runId}`,
        at: Date.parse(r.finishedAt),
        type: 'run_finished',
        text: finishedText(r.status, r.totalTokens, r.error?.message),
      });
    }
  }
  return items;
}

export function itemOfEvent(e: ActivityEvent): FeedItem {
  const base = { tenantId: e.tenantId, sessionId: e.data.id, at: e.at, type: e.type };
  switch (e.type) {
    case 'run_started':
      return {
        ...base,
        key: `run_started:${e.data.runId}`,
        text: `run started for ${KIND[e.data.kind] ?? e.data.kind}`,
      };
    case 'run_finished':
      return {
        ...base,
        key: `run_finished:${e.data.runId}`,
        text: finishedText(e.data.status, e.data.usage.totalTokens),
      };
    case 'opened':
      return { ...base, key: `opened:${e.data.id}:${e.at}`, text: 'went live' };
    case 'closed':
      return { ...base, key: `closed:${e.data.id}:${e.at}`, text: CLOSED[e.data.reason] ?? 'closed' };
    case 'status':
      return { ...base, key: `status:${e.data.id}:${e.at}:${e.data.status}`, text: `is ${e.data.status}` };
    case 'title':
      return {
        ...base,
        key: `title:${e.data.id}:${e.at}`,
        text: e.data.title ? `was titled “${e.data.title}”` : 'lost its title',
      };
  }
}

export function ActivityFeed({
  items,
  titleOf,
  tenantName,
  openable,
}: {
  items: FeedItem[];
  titleOf: (tenantId: string, sessionId: string) => string | null;
  /** The tenant's name, for the admin's view of every tenant; null otherwise. */
  tenantName: ((tenantId: string) => string) | null;
  /** Sessions can be opened (an API key; the admin has no tenant to open them in). */
  openable: boolean;
}) {
  if (items.length === 0) {
    return (
      <p className="muted" data-testid="activity-empty">
        Nothing happened in the last hour. Runs, sessions going live and closing show here as they happen.
      </p>
    );
  }
  return (
    <ol className="activity" data-testid="activity">
      {items.map((item) => {
        const title = titleOf(item.tenantId, item.sessionId) ?? 'Untitled session';
        return (
          <li
            key={item.key}
            data-testid="activity-item"
            data-type={item.type}
            data-session-id={item.sessionId}
          >
            <time dateTime={new Date(item.at).toISOString()}>{time(item.at)}</time>
            {tenantName && <span className="muted">{tenantName(item.tenantId)} · </span>}
            {openable ? (
              <a href={sessionHref(item.sessionId, true)} data-testid="activity-session">
                {title}
              </a>
            ) : (
              <strong data-testid="activity-session">{title}</strong>
            )}{' '}
            <span data-testid="activity-text">{item.text}</span>
          </li>
        );
      })}
    </ol>
  );
}
