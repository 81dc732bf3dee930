// Share a session: a read-only link to its conversation as it is now (POST /v1/sessions/:id/shares, up to the
// head), shown with a copy button; later messages never show through it. The link can be revoked from here at
// once (DELETE /v1/shares/:id): from then on it answers "not found".

import { useState } from 'react';
import type { CreatedShareView, Session } from '@canopy/client';
import { CopyButton } from './copy-button';
import { errorText } from './format';

type State =
  | { kind: 'closed' }
  | { kind: 'open' }
  | { kind: 'working' }
  | { kind: 'shared'; share: CreatedShareView }
  | { kind: 'revoked' }
  | { kind: 'error'; message: string };

export function ShareButton({
  session,
  onRevoke,
}: {
  session: Session;
  onRevoke: (shareId: string) => Promise<void>;
}) {
  const [state, setState] = useState<State>({ kind: 'closed' });

  const create = async () => {
    setState({ kind: 'working' });
    try {
      setState({ kind: 'shared', share: await session.share() });
    } catch (err) {
      setState({ kind: 'error', message: errorText(err) });
    }
  };
  const revoke = async (share: CreatedShareView) => {
    setState({ kind: 'working' });
    try {
      await onRevoke(share.id);
      setState({ kind: 'revoked' });
    } catch (err) {
      setState({ kind: 'error', message: errorText(err) });
    }
  };

  return (
    <div className="share">
      <button
        type="button"
        aria-expanded={state.kind !== 'closed'}
        onClick={() => setState(state.kind === 'closed' ? { kind: 'open' } : { kind: 'closed' })}
        data-testid="share"
      >
        Share
      </button>
      {state.kind !== 'closed' && (
        <div
          className="share-panel"
          role="dialog"
          aria-label="Share this conversation"
          data-testid="share-panel"
        >
          {state.kind === 'open' && (
            <>
              <p>
                A read-only link to this conversation as it is now: anyone with the link can read it, and
                later messages never show.
              </p>
              <button
                type="button"
                className="primary"
                onClick={() => void create()}
                data-testid="share-create"
              >
                Create link
              </button>
            </>
          )}
          {state.kind === 'working' && <p className="muted">Working…</p>}
          {state.kind === 'shared' && (
            <>
              <label>
                Link
                <input type="text" readOnly value={state.share.url} data-testid="share-url" />
              </label>
              <div className="buttons">
                <CopyButton text={state.share.url} label="Copy the link" testId="share-copy" />
                <a href={state.share.url} target="_blank" rel="noreferrer" data-testid="share-open">
                  Open
                </a>
                <button type="button" onClick={() => void revoke(state.share)} data-testid="share-revoke">
                  Revoke
                </button>
              </div>
            </>
          )}
          {state.kind === 'revoked' && (
            <p role="status" data-testid="share-revoked">
              The link is revoked: it no longer opens.
            </p>
          )}
          {state.kind === 'error' && (
            <p className="error" role="alert" data-testid="share-error">
              {state.message}
            </p>
          )}
        </div>
      )}
    </div>
  );
}
