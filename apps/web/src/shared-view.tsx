// A shared conversation (`#/shared/<token>`), read-only: its title and turns as they were when shared, read with no
// credential (GET /v1/shared/:token). "Continue this conversation" forks it into a session of the reader's own
// (POST /v1/shared/:token/fork) and opens it in the playground; that takes signing in to the tenant it belongs to
// (a reader who is not signed in signs in here first; another tenant's credential is told it cannot).

import { useEffect, useState } from 'react';
import {
  Canopy,
  isCanopyError,
  type SharedConversationView,
  type SharedTurn,
  type Turn,
  type Usage,
} from '@canopy/client';
import { connect } from './connect';
import { isAdminKey } from './credential';
import { errorText } from './format';
import { sessionHref } from './route';
import { SignIn } from './sign-in';
import { TurnView } from './turn-view';

type Load =
  | { kind: 'loading' }
  | { kind: 'loaded'; shared: SharedConversationView }
  | { kind: 'missing' }
  | { kind: 'error'; message: string };

/** A shared turn as the chat's turn view takes it: complete, no other versions. */
function asTurn(t: SharedTurn): Turn {
  return {
    ...t,
    status: 'complete',
    error: null,
    usage: t.usage ?? NO_USAGE,
    edits: [t.id],
    regens: t.resId === null ? [] : [t.resId],
  };
}

/** A link made without its usage shows none. */
const NO_USAGE: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  totalTokens: 0,
  inputCost: 0,
  outputCost: 0,
  cacheReadCost: 0,
  cacheWriteCost: 0,
  totalCost: 0,
};

const NONE = new Set<string>();
const noop = () => undefined;

export function SharedView({
  token,
  credential,
  onSignedIn,
}: {
  token: string;
  credential: string | null;
  onSignedIn: (credential: string) => void;
}) {
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  const [continuing, setContinuing] = useState<'idle' | 'working' | 'sign-in'>('idle');
  const [refusal, setRefusal] = useState<string | null>(null);

  useEffect(() => {
    // No credential needed (nor sent): a link is read as anyone would read it.
    const anyone = new Canopy({ baseUrl: location.origin, credential: 'none', maxRetries: 1 });
    let cancelled = false;
    anyone.shares.read(token).then(
      (shared) => !cancelled && setLoad({ kind: 'loaded', shared }),
      (err: unknown) =>
        !cancelled &&
        setLoad(
          isCanopyError(err, 'not_found') ? { kind: 'missing' } : { kind: 'error', message: errorText(err) },
        ),
    );
    return () => {
      cancelled = true;
    };
  }, [token]);

  const proceed = async (as: string) => {
    setContinuing('working');
    setRefusal(null);
    try {
      const info = await connect(as).shares.fork(token);
      location.hash = sessionHref(info.id);
    } catch (err) {
      setRefusal(
        isCanopyError(err, 'not_found')
          ? 'This conversation belongs to another workspace: it can be continued only there.'
          : errorText(err),
      );
      setContinuing('idle');
    }
  };
  const continueIt = () => {
    if (credential && !isAdminKey(credential)) void proceed(credential);
    else setContinuing('sign-in');
  };

  if (load.kind === 'loading') return <p className="muted shared-page">Loading the conversation…</p>;
  if (load.kind === 'missing')
    return (
      <main className="shared-page" data-testid="shared-missing">
        <h1>Conversation not found</h1>
        <p>This link does not exist, has expired or was revoked.</p>
      </main>
    );
  if (load.kind === 'error')
    return (
      <main className="shared-page">
        <p className="error" role="alert">
          {load.message}
        </p>
      </main>
    );
  const { shared } = load;
  return (
    <main className="shared-page" data-testid="shared">
      <header className="shared-head">
        <div>
          <h1 data-testid="shared-title">{shared.title ?? 'Shared conversation'}</h1>
          <p className="muted">
            Shared conversation · read-only · shared {new Date(shared.sharedAt).toLocaleString()}
          </p>
        </div>
        <button
          type="button"
          className="primary"
          disabled={continuing === 'working'}
          onClick={continueIt}
          data-testid="shared-continue"
        >
          Continue this conversation
        </button>
      </header>
      {refusal && (
        <p className="error" role="alert" data-testid="shared-refusal">
          {refusal}
        </p>
      )}
      {continuing === 'sign-in' && (
        <div className="shared-sign-in" data-testid="shared-sign-in">
          <SignIn
            onSignedIn={(c) => {
              onSignedIn(c);
              void proceed(c);
            }}
          />
        </div>
      )}
      <div className="turns" data-testid="shared-turns">
        {shared.turns.map((turn) => (
          <TurnView
            key={turn.id}
            turn={asTurn(turn)}
            idle={false}
            readOnly
            laterTurns={0}
            editTarget={undefined}
            editRequest={null}
            progress={{}}
            awaiting={NONE}
            clientTools={NONE}
            onNavigate={noop}
            onRegenerate={noop}
            onEdit={() => Promise.resolve(false)}
            onDecide={noop}
          />
        ))}
      </div>
    </main>
  );
}
