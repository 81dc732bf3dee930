// The shell: sign-in, the header (pages, who is signed in, sign out) and the page of the current route.

import { lazy, Suspense, useMemo, useState } from 'react';
import { connect } from './connect';
import {
  clearCredential,
  describeCredential,
  isAdminKey,
  isUserToken,
  loadCredential,
  saveCredential,
} from './credential';
import { Playground } from './playground';
import { useRoute } from './route';
import { SharedView } from './shared-view';
import { SignIn } from './sign-in';

// The dashboard (and its charting library) and the admin's tenant pages load only when they are opened.
const Dashboard = lazy(() => import('./dashboard').then((m) => ({ default: m.Dashboard })));
const TenantsPage = lazy(() => import('./tenants-page').then((m) => ({ default: m.TenantsPage })));

export function App() {
  const [credential, setCredential] = useState<string | null>(loadCredential);
  const route = useRoute();
  const canopy = useMemo(() => (credential ? connect(credential) : null), [credential]);

  // A shared conversation is for anyone with its link, signed in or not.
  if (route.page === 'shared') {
    return (
      <SharedView
        token={route.token}
        credential={credential}
        onSignedIn={(c) => {
          saveCredential(c);
          setCredential(c);
        }}
      />
    );
  }
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
  // The dashboard and the activity feed are tenant-wide views: API keys and the admin key only. The admin key has
  // no tenant, so no playground: it watches every tenant on the dashboard.
  const operator = !isUserToken(credential);
  const admin = isAdminKey(credential);

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Canopy</span>
        <nav aria-label="Pages">
          {!admin && (
            <a
              href="#/"
              className={route.page === 'playground' ? 'current' : ''}
              data-testid="nav-playground"
            >
              Playground
            </a>
          )}
          {operator && (
            <a
              href="#/dashboard"
              className={
                route.page === 'dashboard' || (admin && route.page === 'playground') ? 'current' : ''
              }
              data-testid="nav-dashboard"
            >
              Dashboard
            </a>
          )}
          {admin && (
            <a
              href="#/tenants"
              className={route.page === 'tenants' ? 'current' : ''}
              data-testid="nav-tenants"
            >
              Tenants
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
      {admin && route.page === 'tenants' ? (
        <Suspense fallback={<p className="muted">Loading the tenants…</p>}>
          <TenantsPage canopy={canopy} tenantId={route.tenantId} />
        </Suspense>
      ) : (route.page === 'dashboard' && operator) || admin ? (
        <Suspense fallback={<p className="muted">Loading the dashboard…</p>}>
          <Dashboard canopy={canopy} allTenants={admin} />
        </Suspense>
      ) : (
        <Playground
          canopy={canopy}
          sessionId={route.page === 'playground' ? route.sessionId : null}
          nodeId={route.page === 'playground' ? route.nodeId : null}
          observe={route.page === 'playground' && route.observe}
          followActivity={operator}
          userToken={!operator}
        />
      )}
    </div>
  );
}
