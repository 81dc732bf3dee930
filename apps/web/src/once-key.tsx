// An API key just created, shown this once (the API never answers it again): the key, a copy button, and a
// button that hides it for good once it is kept somewhere.

import type { ReactNode } from 'react';
import { CopyButton } from './copy-button';

export function OnceKey({ title, apiKey, onDone }: { title: ReactNode; apiKey: string; onDone: () => void }) {
  return (
    <div className="once-key" role="status" data-testid="once-key">
      <p>{title}</p>
      <div className="once-key-value">
        <code data-testid="once-key-value">{apiKey}</code>
        <CopyButton text={apiKey} label="Copy the API key" testId="once-key-copy" />
      </div>
      <p className="hint">Shown once: copy it now, it cannot be read back.</p>
      <button type="button" onClick={onDone} data-testid="once-key-done">
        I have kept it, hide it
      </button>
    </div>
  );
}
