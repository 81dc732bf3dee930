// Export a session to a file: `canopy` (the whole tree, JSON, imports back exactly), `openai` / `anthropic` (the
// active path as those APIs' message arrays, JSON) or `markdown` (the active path, for people). The file is made
// in the browser from GET /v1/sessions/:id/export and downloaded; a refusal is shown beside the button.

import { useState } from 'react';
import type { ExportFormat, Session } from '@canopy/client';
import { errorText } from './format';

const FORMATS: Array<[ExportFormat, string]> = [
  ['canopy', 'Canopy JSON (whole tree)'],
  ['markdown', 'Markdown'],
  ['openai', 'OpenAI messages JSON'],
  ['anthropic', 'Anthropic messages JSON'],
];

/** A file name from the title (or the id): letters, digits and dashes. */
export function exportFileName(title: string | null, id: string, format: ExportFormat): string {
  const base =
    (title ?? '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || id;
  return `${base}.${format === 'markdown' ? 'md' : `${format}.json`}`;
}

function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  // The download has started from the URL by the next tick.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

type State =
  | { kind: 'idle' }
  | { kind: 'working' }
  | { kind: 'error'; message: string }
  | { kind: 'done'; name: string };

export function ExportMenu({ session, title }: { session: Session; title: string | null }) {
  const [open, setOpen] = useState(false);
  const [format, setFormat] = useState<ExportFormat>('canopy');
  const [state, setState] = useState<State>({ kind: 'idle' });

  const run = async () => {
    setState({ kind: 'working' });
    try {
      const data = await session.export(format);
      const name = exportFileName(title, session.id, format);
      if (typeof data === 'string') download(name, data, 'text/markdown');
      else download(name, JSON.stringify(data, null, 2), 'application/json');
      setState({ kind: 'done', name });
    } catch (err) {
      setState({ kind: 'error', message: errorText(err) });
    }
  };

  return (
    <div className="export-menu">
      <button
        type="button"
        aria-expanded={open}
        onClick={() => {
          setOpen(!open);
          setState({ kind: 'idle' });
        }}
        data-testid="export-toggle"
      >
        Export
      </button>
      {open && (
        <div
          className="export-popover"
          role="group"
          aria-label="Export this session"
          data-testid="export-menu"
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.preventDefault();
              e.stopPropagation();
              setOpen(false);
            }
          }}
        >
          <label>
            Format
            <select
              value={format}
              autoFocus
              onChange={(e) => {
                setFormat(e.target.value as ExportFormat);
                setState({ kind: 'idle' });
              }}
              data-testid="export-format"
            >
              {FORMATS.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            className="primary"
            disabled={state.kind === 'working'}
            onClick={() => void run()}
            data-testid="export-download"
          >
            {state.kind === 'working' ? 'Exporting…' : 'Download'}
          </button>
          {state.kind === 'done' && (
            <p role="status" className="muted" data-testid="export-done">
              Downloaded {state.name}
            </p>
          )}
          {state.kind === 'error' && (
            <p role="alert" className="error" data-testid="export-error">
              Export failed: {state.message}
            </p>
          )}
        </div>
      )}
    </div>
  );
}
