// A chat page built on the AI SDK's useChat, talking to Canopy with a user token from your backend: the reply
// streams as Canopy runs it, survives a reload (resume: the run in flight is streamed again from its start), and
// every reply can be regenerated and its versions browsed (‹ 1/2 ›), the server's tree being the history.
//
// The page's origin serves it, mints user tokens (POST /canopy-token) and forwards /v1 to Canopy: serve.ts in
// production, Vite's dev server (vite.config.ts) in development. Query parameters: user (the demo user), model,
// delayMs (the built-in mock model's pace).

import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';

/** What Canopy puts on each message: its node and the versions of its turn. */
interface Meta {
  nodeId: number | null;
  versions: number[];
  versionIndex: number;
}
type Message = UIMessage<Meta>;

const params = new URLSearchParams(location.search);
const user = params.get('user') ?? 'demo';
const model = params.get('model') ?? 'mock:echo';
const delayMs = Number(params.get('delayMs') ?? '25');

/**
 * The chat's id is the Canopy session's, kept in the URL's hash so a reload finds the conversation again; a page
 * without one starts a new chat (Canopy creates the session with its first message).
 */
function chatId(): { id: string; isNew: boolean } {
  if (location.hash.length > 1) return { id: decodeURIComponent(location.hash.slice(1)), isNew: false };
  const id = `chat-${crypto.randomUUID()}`;
  history.replaceState(null, '', `#${id}`);
  return { id, isNew: true };
}

const chat = chatId();

async function userToken(): Promise<string> {
  const res = await fetch('/canopy-token', { method: 'POST', headers: { 'x-demo-user': user } });
  if (!res.ok) throw new Error(`token backend: ${res.status}`);
  return ((await res.json()) as { token: string }).token;
}

/** The conversation as Canopy holds it (none yet for a new chat). */
async function loadMessages(id: string, token: string): Promise<Message[]> {
  const res = await fetch(`/v1/ui/chat/${encodeURIComponent(id)}/messages`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (res.status === 404) return [];
  if (!res.ok) throw new Error(`messages: ${res.status}`);
  return (await res.json()) as Message[];
}

function App() {
  const [boot, setBoot] = useState<{ id: string; token: string; messages: Message[]; isNew: boolean } | null>(
    null,
  );
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const { id, isNew } = chat;
    userToken()
      .then(async (token) =>
        setBoot({ id, token, isNew, messages: isNew ? [] : await loadMessages(id, token) }),
      )
      .catch((err: unknown) => setError(String(err)));
  }, []);
  if (error) return <p role="alert">{error}</p>;
  if (!boot) return <p>Loading…</p>;
  return <Chat {...boot} />;
}

function Chat({
  id,
  token,
  messages: initial,
  isNew,
}: {
  id: string;
  token: string;
  messages: Message[];
  isNew: boolean;
}) {
  const authorization = `Bearer ${token}`;
  const [input, setInput] = useState('');
  const { messages, setMessages, sendMessage, regenerate, stop, status, error } = useChat<Message>({
    id,
    messages: initial,
    // A chat that exists may have a run in flight (a reload mid-reply): its stream again, from the start.
    resume: !isNew,
    transport: new DefaultChatTransport({
      api: '/v1/ui/chat',
      headers: { authorization },
      // Used by Canopy only when it creates the session (the first message of a new chat).
      body: { model, opts: { numbered: true, delayMs } },
    }),
  });
  const busy = status === 'submitted' || status === 'streaming';

  /** Another version of a turn: Canopy moves the active path there, and the page shows the path again. */
  async function showVersion(nodeId: number) {
    const res = await fetch(`/v1/sessions/${encodeURIComponent(id)}/navigate`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ nodeId }),
    });
    if (res.ok) setMessages(await loadMessages(id, token));
  }

  /** Stop is a cancel: the stream closes here, and Canopy cancels the run (nothing of it is committed). */
  async function stopRun() {
    await stop();
    await fetch(`/v1/sessions/${encodeURIComponent(id)}/cancel`, {
      method: 'POST',
      headers: { authorization },
    });
  }

  return (
    <main style={{ maxWidth: 720, margin: '2rem auto', fontFamily: 'system-ui, sans-serif' }}>
      <h1 style={{ fontSize: '1.25rem' }}>useChat on Canopy</h1>
      <ol aria-label="Conversation" style={{ listStyle: 'none', padding: 0 }}>
        {messages.map((message, i) => (
          <li key={message.id} data-role={message.role} style={{ margin: '0.75rem 0' }}>
            <strong>{message.role === 'user' ? 'You' : 'Assistant'}: </strong>
            <span data-testid="text">
              {message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')}
            </span>
            {message.role === 'assistant' && <Versions meta={message.metadata} onPick={showVersion} />}
            {message.role === 'assistant' && i === messages.length - 1 && !busy && (
              <button type="button" onClick={() => void regenerate()}>
                Regenerate
              </button>
            )}
          </li>
        ))}
      </ol>
      {error && <p role="alert">{error.message}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!input.trim()) return;
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <label>
          Message <input value={input} onChange={(e) => setInput(e.target.value)} disabled={busy} />
        </label>
        <button type="submit" disabled={busy}>
          Send
        </button>
        {busy && (
          <button type="button" onClick={() => void stopRun()}>
            Stop
          </button>
        )}
      </form>
      <p data-testid="status">{status}</p>
    </main>
  );
}

/** ‹ 1/2 ›: the versions of a reply's turn, from the metadata Canopy gives every message. */
function Versions({ meta, onPick }: { meta: Meta | undefined; onPick: (nodeId: number) => Promise<void> }) {
  if (!meta || meta.versions.length < 2) return null;
  const { versions, versionIndex } = meta;
  return (
    <span data-testid="versions" style={{ marginLeft: '0.5rem' }}>
      <button
        type="button"
        aria-label="Previous version"
        disabled={versionIndex === 0}
        onClick={() => void onPick(versions[versionIndex - 1]!)}
      >
        ‹
      </button>
      <span>
        {versionIndex + 1}/{versions.length}
      </span>
      <button
        type="button"
        aria-label="Next version"
        disabled={versionIndex === versions.length - 1}
        onClick={() => void onPick(versions[versionIndex + 1]!)}
      >
        ›
      </button>
    </span>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
