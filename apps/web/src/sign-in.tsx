// Sign-in: a tenant API key (`ck_…`), a user token minted by POST /v1/tokens or the admin key, checked against
// the API before it is kept.

import { useState, type FormEvent } from 'react';
import { isCanopyError } from '@canopy/client';
import { connect } from './connect';
import { errorText } from './format';

export function SignIn({ onSignedIn }: { onSignedIn: (credential: string) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [checking, setChecking] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const credential = value.trim();
    if (!credential) return;
    setChecking(true);
    setError(null);
    try {
      // GET /v1/live answers every valid credential (keys, user tokens, the admin key).
      await connect(credential, { maxRetries: 0 }).live.list();
      onSignedIn(credential);
    } catch (err) {
      setError(isCanopyError(err, 'unauthorized') ? 'This key or token is not valid.' : errorText(err));
    } finally {
      setChecking(false);
    }
  };

  return (
    <main className="sign-in">
      <h1>Canopy</h1>
      <p>Sign in with a tenant API key, a user token or the admin key.</p>
      <form onSubmit={(e) => void submit(e)}>
        <input
          type="password"
          autoComplete="off"
          placeholder="ck_… or a user token"
          value={value}
          onChange={(e) => setValue(e.target.value)}
          data-testid="credential-input"
          autoFocus
        />
        <button type="submit" disabled={checking || !value.trim()} data-testid="sign-in">
          {checking ? 'Checking…' : 'Sign in'}
        </button>
      </form>
      {error && (
        <p className="error" data-testid="sign-in-error">
          {error}
        </p>
      )}
      <p className="hint">The credential is kept in this browser (localStorage) until you sign out.</p>
    </main>
  );
}
