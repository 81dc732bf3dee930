// The shell: sign-in, the header (pages, who is signed in, sign out) and the page of the current route.

import { useMemo, useState } from 'react';
import { connect } from './connect';
import {
  clearCredential,
  describeCredential,
  isUserToken,
  loadCredential,
  saveCredential,
} from './credential';
import { Dashboard } from './dashboard';
import { Playground } from './playground';
import { useRoute } from './route';
import { SignIn } from './sign-in';

export function App() {
  const [credential, setCredential] = useState<string | null>(loadCredential);
  const route = useRoute();
  const canopy = useMemo(() => (credential ? connect(credential) : null), [credential]);

  if (!canopy || !credential) {
    return (
      <SignIn
        onSignedIn={(c) => {
          saveCredential(c);
          setCredential(c);
        }}
      />
    );
  }
  // The dashboard and the activity feed are tenant-wide views: API keys and the admin key only.
  const operator = !isUserToken(credential);

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Canopy</span>
        <nav>
          <a href="#/" className={route.page === 'playground' ? 'current' : ''} data-testid="nav-playground">
            Playground
          </a>
          {operator && (
            <a
              href="#/dashboard"
              className={route.page === 'dashboard' ? 'current' : ''}
              data-testid="nav-dashboard"
            >
              Dashboard
            </a>
          )}
        </nav>
        <span className="who" data-testid="signed-in-as">
          {describeCredential(credential)}
        </span>
        <button
          type="button"
          data-testid="sign-out"
          onClick={() => {
            clearCredential();
            setCredential(null);
            // The next identity starts from the playground, not from a page of this one's.
            location.hash = '#/';
          }}
        >
          Sign out
        </button>
      </header>
      {route.page === 'dashboard' && operator ? (
        <Dashboard canopy={canopy} />
      ) : (
        <Playground
          canopy={canopy}
          sessionId={route.page === 'playground' ? route.sessionId : null}
          followActivity={operator}
        />
      )}
    </div>
  );
}
