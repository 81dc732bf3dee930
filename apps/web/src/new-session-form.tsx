// Creating a session: a model (`mock:echo` by default), an optional title, and optional JSON for the model's
// options (e.g. a `mock:script` script) and the client tools the session declares.

import { useState, type FormEvent } from 'react';
import type { Canopy, ClientTool, SessionInfo } from '@canopy/client';
import { errorText } from './format';

const OPTS_EXAMPLE =
  '{"script": [{"toolCalls": [{"name": "lookup", "input": {"q": "x"}}]}, {"text": "Done."}]}';
const TOOLS_EXAMPLE =
  '[{"name": "lookup", "description": "Looks it up", "inputSchema": {"type": "object"}, "approval": true}]';

function parseJson<T>(text: string, what: string, check: (v: unknown) => boolean): T | undefined {
  if (!text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${what}: not JSON (${(err as Error).message})`, { cause: err });
  }
  if (!check(value)) throw new Error(`${what}: wrong shape`);
  return value as T;
}

export function NewSessionForm({
  canopy,
  onCreated,
}: {
  canopy: Canopy;
  onCreated: (info: SessionInfo) => void;
}) {
  const [model, setModel] = useState('mock:echo');
  const [title, setTitle] = useState('');
  const [opts, setOpts] = useState('');
  const [tools, setTools] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    let parsedOpts: Record<string, unknown> | undefined;
    let parsedTools: ClientTool[] | undefined;
    try {
      parsedOpts = parseJson(
        opts,
        'Options',
        (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
      );
      parsedTools = parseJson(tools, 'Client tools', Array.isArray);
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    setBusy(true);
    try {
      const { info } = await canopy.sessions.create({
        model: model.trim(),
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(parsedOpts ? { opts: parsedOpts } : {}),
        ...(parsedTools ? { tools: parsedTools } : {}),
      });
      setTitle('');
      onCreated(info);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="new-session" onSubmit={(e) => void submit(e)} data-testid="new-session-form">
      <h2>New session</h2>
      <label>
        Model
        <input value={model} onChange={(e) => setModel(e.target.value)} data-testid="new-model" />
      </label>
      <label>
        Title <span className="muted">(optional)</span>
        <input value={title} onChange={(e) => setTitle(e.target.value)} data-testid="new-title" />
      </label>
      <label>
        Options JSON <span className="muted">(optional)</span>
        <textarea
          rows={3}
          value={opts}
          placeholder={OPTS_EXAMPLE}
          onChange={(e) => setOpts(e.target.value)}
          data-testid="new-opts"
        />
      </label>
      <label>
        Client tools JSON <span className="muted">(optional)</span>
        <textarea
          rows={3}
          value={tools}
          placeholder={TOOLS_EXAMPLE}
          onChange={(e) => setTools(e.target.value)}
          data-testid="new-tools"
        />
      </label>
      {error && (
        <p className="error" data-testid="new-session-error">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy || !model.trim()} data-testid="create-session">
        Create
      </button>
    </form>
  );
}
