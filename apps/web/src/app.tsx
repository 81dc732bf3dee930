// The shell: sign-in, the header (pages, who is signed in, sign out) and the page of the current route.

import { useMemo, useState } from 'react';
import { connect } from './connect';
import { clearCredential, describeCredential, loadCredential, saveCredential } from './credential';
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

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Canopy</span>
        <nav>
          <a href="#/" className={route.page === 'playground' ? 'current' : ''} data-testid="nav-playground">
            Playground
          </a>
          <a
            href="#/dashboard"
            className={route.page === 'dashboard' ? 'current' : ''}
            data-testid="nav-dashboard"
          >
            Dashboard
          </a>
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
          }}
        >
          Sign out
        </button>
      </header>
      {route.page === 'dashboard' ? (
        <Dashboard canopy={canopy} />
      ) : (
        <Playground canopy={canopy} sessionId={route.sessionId} />
      )}
    </div>
  );
}
