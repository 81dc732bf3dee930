// Creating a session: a model from the deployment's list (GET /v1/models, grouped by provider, saying which take
// tools), a title, a system prompt, the tenant's enabled MCP servers to offer as tools (GET /v1/mcp-servers, a
// tenant key only: saved in opts.mcpServers; none picked, the session takes the tenant's default), and the model's
// options and the client tools as JSON, pre-filled with a working example for the chosen model (edit or empty them;
// an example is replaced when the model changes only if it was not edited).

import { useEffect, useMemo, useState, type FormEvent } from 'react';
import type {
  Canopy,
  ClientTool,
  McpServerView,
  ModelInfo,
  ServerToolInfo,
  SessionInfo,
} from '@canopy/client';
import { errorText } from './format';

const DEFAULT_MODEL = 'mock:echo';

/** The options and client tools a model gets pre-filled with: real values that work as they are. */
function examples(
  model: ModelInfo | undefined,
  serverTools: ServerToolInfo[],
): { opts: string; tools: string } {
  const names = serverTools.map((t) => t.name);
  const has = (name: string) => names.includes(name);
  if (!model || model.id === 'mock:echo') {
    return { opts: pretty({ delayMs: 30, numbered: true }), tools: '[]' };
  }
  if (model.id === 'mock:script') {
    // A scripted demo: server tools that run at once, a client tool to answer, one that needs approval.
    const script: unknown[] = [];
    if (has('clock') && has('calculator')) {
      script.push({
        text: 'Let me check the time and do the sum.',
        toolCalls: [
          { name: 'clock', input: { timeZone: 'UTC' } },
          { name: 'calculator', input: { expression: '(2 + 3) * 7' } },
        ],
      });
    }
    script.push({ text: 'Which city are you in?', toolCalls: [{ name: 'ask_city', input: {} }] });
    if (has('deploy')) script.push({ toolCalls: [{ name: 'deploy', input: { target: 'staging' } }] });
    script.push({
      text: 'All done. Here is the code:\n\n```ts\nconst answer: number = (2 + 3) * 7; // 35\n```',
      delayMs: 20,
    });
    return {
      opts: pretty({
        serverTools: ['clock', 'calculator', 'deploy'].filter(has),
        script,
      }),
      tools: pretty([
        {
          name: 'ask_city',
          description: 'Asks the person at the keyboard which city they are in',
          inputSchema: { type: 'object', properties: {} },
        },
      ]),
    };
  }
  return {
    opts: pretty(
      model.tools && names.length ? { temperature: 0.7, serverTools: names } : { temperature: 0.7 },
    ),
    tools: '[]',
  };
}

function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

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
  mcpServers: offerMcpServers,
}: {
  canopy: Canopy;
  onCreated: (info: SessionInfo) => void;
  /** Offer the tenant's MCP servers (a tenant API key: a user token may not list them). */
  mcpServers: boolean;
}) {
  const [models, setModels] = useState<ModelInfo[] | null>(null);
  const [serverTools, setServerTools] = useState<ServerToolInfo[]>([]);
  // The tenant's enabled MCP servers; empty for a user token or while loading.
  const [mcpServers, setMcpServers] = useState<McpServerView[]>([]);
  const [picked, setPicked] = useState<ReadonlySet<string>>(new Set());
  const [model, setModel] = useState(DEFAULT_MODEL);
  const [title, setTitle] = useState('');
  const [system, setSystem] = useState('');
  const [opts, setOpts] = useState<string | null>(null);
  const [tools, setTools] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let gone = false;
    Promise.all([canopy.models(), canopy.serverTools()]).then(
      ([m, t]) => {
        if (gone) return;
        setModels(m);
        // The registered ones (opts.serverTools); an MCP server's tools come with the server (opts.mcpServers).
        setServerTools(t.filter((tool) => tool.server === undefined));
      },
      (err: unknown) => !gone && setError(errorText(err)),
    );
    // A refusal (the tenant's servers are not this credential's to list) leaves the picker out.
    if (offerMcpServers) {
      canopy.mcpServers.list().then(
        (servers) => !gone && setMcpServers(servers.filter((server) => server.enabled)),
        () => undefined,
      );
    }
    return () => {
      gone = true;
    };
  }, [canopy, offerMcpServers]);

  const toggleServer = (name: string, on: boolean) =>
    setPicked((current) => {
      const next = new Set(current);
      if (on) next.add(name);
      else next.delete(name);
      return next;
    });

  const info = models?.find((m) => m.id === model);
  const example = useMemo(() => examples(info, serverTools), [info, serverTools]);
  // null: not edited, the example stands (and follows the model).
  const optsText = opts ?? example.opts;
  const toolsText = tools ?? example.tools;
  const providers = useMemo(() => [...new Set((models ?? []).map((m) => m.provider))], [models]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    let parsedOpts: Record<string, unknown> | undefined;
    let parsedTools: ClientTool[] | undefined;
    try {
      parsedOpts = parseJson(
        optsText,
        'Options',
        (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
      );
      parsedTools = parseJson(toolsText, 'Client tools', Array.isArray);
    } catch (err) {
      setError((err as Error).message);
      return;
    }
    const servers = mcpServers.map((server) => server.name).filter((name) => picked.has(name));
    if (servers.length > 0) parsedOpts = { ...parsedOpts, mcpServers: servers };
    setBusy(true);
    try {
      const { info: created } = await canopy.sessions.create({
        model,
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(system.trim() ? { system: system.trim() } : {}),
        ...(parsedOpts ? { opts: parsedOpts } : {}),
        ...(parsedTools?.length ? { tools: parsedTools } : {}),
      });
      setTitle('');
      onCreated(created);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      id="new-session-form"
      className="new-session"
      onSubmit={(e) => void submit(e)}
      data-testid="new-session-form"
    >
      <h2>New session</h2>
      <label>
        Model
        <select
          value={model}
          onChange={(e) => setModel(e.target.value)}
          disabled={models === null}
          data-testid="new-model"
        >
          {models === null && <option value={model}>{model}</option>}
          {providers.map((provider) => (
            <optgroup key={provider} label={provider === 'mock' ? 'Built in' : provider}>
              {models!
                .filter((m) => m.provider === provider)
                .map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.id}
                    {m.tools ? ' · tools' : ''}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
      </label>
      {info?.description && (
        <p className="model-note" data-testid="model-description">
          {info.description}
        </p>
      )}
      <label>
        <span>
          Title <span className="muted">(optional)</span>
        </span>
        <input value={title} onChange={(e) => setTitle(e.target.value)} data-testid="new-title" />
      </label>
      <label>
        <span>
          System prompt <span className="muted">(optional)</span>
        </span>
        <textarea
          rows={2}
          value={system}
          placeholder="e.g. You are a concise assistant."
          onChange={(e) => setSystem(e.target.value)}
          data-testid="new-system"
        />
      </label>
      {mcpServers.length > 0 && (
        <fieldset className="mcp-servers" data-testid="new-mcp-servers">
          <legend>
            MCP servers <span className="muted">(none picked: the tenant’s default)</span>
          </legend>
          {mcpServers.map((server) => (
            <label key={server.id} className="check">
              <input
                type="checkbox"
                checked={picked.has(server.name)}
                onChange={(e) => toggleServer(server.name, e.target.checked)}
                data-testid={`mcp-server-${server.name}`}
              />
              <span>
                {server.name}{' '}
                <span className="muted">
                  {server.tools === null
                    ? '· tools not listed yet'
                    : `· ${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}`}
                </span>
              </span>
            </label>
          ))}
        </fieldset>
      )}
      <label>
        Options (JSON)
        <textarea
          rows={4}
          value={optsText}
          spellCheck={false}
          onChange={(e) => setOpts(e.target.value)}
          data-testid="new-opts"
        />
      </label>
      <label>
        Client tools (JSON)
        <textarea
          rows={3}
          value={toolsText}
          spellCheck={false}
          onChange={(e) => setTools(e.target.value)}
          data-testid="new-tools"
        />
      </label>
      {(opts !== null || tools !== null) && (
        <button
          type="button"
          className="link"
          onClick={() => {
            setOpts(null);
            setTools(null);
          }}
          data-testid="reset-examples"
        >
          Back to the example for {model}
        </button>
      )}
      {error && (
        <p className="error" data-testid="new-session-error">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy || models === null} data-testid="create-session">
        Create
      </button>
    </form>
  );
}
