// Import conversations from a file: a Canopy export (JSON), an OpenAI or Anthropic message list, a ChatGPT
// conversation, or many at once (NDJSON, or ChatGPT's whole conversations.json). One conversation opens once
// imported; many answer a line-by-line report. Refusals say what and where (the API names the field); a Canopy
// export of a session that is still here can be imported again as a copy.

import { useState, type FormEvent } from 'react';
import { isCanopyError, type Canopy, type ImportLineReport, type SessionInfo } from '@canopy/client';
import { errorText, plural } from './format';
import { planImport, withoutSessionId, type ImportChoice, type ImportPlan } from './import-file';

const FORMATS: Array<[ImportChoice, string]> = [
  ['auto', 'Detect from the file'],
  ['canopy', 'Canopy export'],
  ['openai', 'OpenAI messages'],
  ['anthropic', 'Anthropic messages'],
  ['chatgpt', 'ChatGPT conversations.json'],
];

type State =
  | { kind: 'idle' }
  | { kind: 'importing' }
  | { kind: 'error'; message: string; copyable?: unknown }
  | { kind: 'imported'; info: SessionInfo }
  | { kind: 'report'; imported: number; failed: ImportLineReport[]; total: number };

function describeError(err: unknown): string {
  if (isCanopyError(err)) {
    const field = typeof err.details?.field === 'string' ? err.details.field : null;
    const where = field && !err.message.includes(field) ? ` (at ${field})` : '';
    return `${err.message}${where}`;
  }
  return errorText(err);
}

export function ImportPanel({
  canopy,
  onImported,
  onImportedMany,
  onClose,
}: {
  canopy: Canopy;
  /** One conversation imported: the page lists and opens it. */
  onImported: (info: SessionInfo) => void;
  /** Many imported: the page fetches its list again. */
  onImportedMany: () => void;
  onClose: () => void;
}) {
  const [choice, setChoice] = useState<ImportChoice>('auto');
  const [file, setFile] = useState<File | null>(null);
  const [state, setState] = useState<State>({ kind: 'idle' });

  const importOne = async (plan: Extract<ImportPlan, { kind: 'one' }>) => {
    try {
      const { info } = await canopy.sessions.import({ format: plan.format, data: plan.data });
      setState({ kind: 'imported', info });
      onImported(info);
    } catch (err) {
      const taken = isCanopyError(err, 'already_exists') && plan.format === 'canopy';
      setState({
        kind: 'error',
        message: taken
          ? 'This conversation is already here (the export keeps its session id). Import it as a copy, with a new id?'
          : `Not imported: ${describeError(err)}`,
        ...(taken ? { copyable: withoutSessionId(plan.data) } : {}),
      });
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    setState({ kind: 'importing' });
    let text: string;
    try {
      text = await file.text();
    } catch (err) {
      setState({ kind: 'error', message: `The file could not be read: ${errorText(err)}` });
      return;
    }
    const plan = planImport(text, choice);
    if (plan.kind === 'invalid') {
      setState({ kind: 'error', message: plan.message });
      return;
    }
    if (plan.kind === 'one') {
      await importOne(plan);
      return;
    }
    try {
      const result = await canopy.sessions.importMany(plan.ndjson, { format: plan.format });
      setState({
        kind: 'report',
        imported: result.imported,
        failed: result.reports.filter((r) => !r.ok),
        total: result.reports.length,
      });
      onImportedMany();
    } catch (err) {
      setState({ kind: 'error', message: `Not imported: ${describeError(err)}` });
    }
  };

  return (
    <form
      className="import-panel"
      onSubmit={(e) => void submit(e)}
      aria-label="Import"
      data-testid="import-panel"
    >
      <div className="panel-head">
        <h3>Import conversations</h3>
        <button type="button" className="link" onClick={onClose} data-testid="import-close">
          Close
        </button>
      </div>
      <label>
        File (JSON, or NDJSON for many)
        <input
          type="file"
          accept=".json,.ndjson,.jsonl,application/json,application/x-ndjson"
          onChange={(e) => {
            setFile(e.target.files?.[0] ?? null);
            setState({ kind: 'idle' });
          }}
          data-testid="import-file"
        />
      </label>
      <label>
        Format
        <select
          value={choice}
          onChange={(e) => setChoice(e.target.value as ImportChoice)}
          data-testid="import-format"
        >
          {FORMATS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={!file || state.kind === 'importing'} data-testid="import-submit">
        {state.kind === 'importing' ? 'Importing…' : 'Import'}
      </button>
      {state.kind === 'error' && (
        <div className="error" role="alert" data-testid="import-error">
          <p>{state.message}</p>
          {state.copyable !== undefined && (
            <button
              type="button"
              onClick={() => {
                setState({ kind: 'importing' });
                void importOne({ kind: 'one', format: 'canopy', data: state.copyable });
              }}
              data-testid="import-copy"
            >
              Import as a copy
            </button>
          )}
        </div>
      )}
      {state.kind === 'imported' && (
        <p role="status" data-testid="import-done">
          Imported “{state.info.title ?? state.info.id}”.
        </p>
      )}
      {state.kind === 'report' && (
        <div role="status" data-testid="import-report">
          <p>
            Imported {state.imported} of {plural(state.total, 'conversation')}
            {state.failed.length > 0 ? `; ${state.failed.length} refused:` : '.'}
          </p>
          {state.failed.length > 0 && (
            <ul className="import-failures">
              {state.failed.map(
                (r) =>
                  !r.ok && (
                    <li key={r.line} className="error" data-testid="import-failure">
                      Line {r.line}: {r.error.message}
                      {r.error.field && !r.error.message.includes(r.error.field)
                        ? ` (at ${r.error.field})`
                        : ''}
                    </li>
                  ),
              )}
            </ul>
          )}
        </div>
      )}
    </form>
  );
}
