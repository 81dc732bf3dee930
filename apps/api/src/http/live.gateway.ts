// The WebSocket endpoint (/v1/ws): authenticated once at connection time (`?token=` or Authorization), then JSON
// frames. Client: {op: subscribe|unsubscribe|activity, ...} and any command as {op, ref, sessionId, ...body}.
// Server: {type: "event", sessionId, seq, event, data, at} (`at`: when the event was published, ms since the
// epoch), {type: "activity", event, data} and {type: "reply", ref, ok, data?, error?}. A client never names its
// tenant or user: both come from its credential.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Logger } from '@nestjs/common';
import { WebSocketGateway, type OnGatewayConnection, type OnGatewayDisconnect } from '@nestjs/websockets';
import type { RawData, WebSocket } from 'ws';
import { z } from 'zod';
import {
  branchSchema,
  navigateSchema,
  promptSchema,
  resumeSchema,
  sessionIdSchema,
  unstorableTextPath,
  type Scope,
} from '@canopy/core';
import { CanopyException, InjectConfig, describe as describeError, type CanopyConfig } from '@canopy/common';
import { AuthService, credentialOf, scopeOf, type Principal } from '@canopy/auth';
import { SessionService, type CommandResult, type Subscription } from '@canopy/session';
import { ACTIVITY_FEED, type ActivityFeed, type Unsubscribe } from '@canopy/realtime';

const ref = z.union([z.string().max(200), z.number()]).optional();
const frameSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('subscribe'),
    ref,
    sessionId: sessionIdSchema,
    mode: z.enum(['controller', 'observer']).optional(),
    after: z.number().int().min(0).optional(),
  }),
  z.object({ op: z.literal('unsubscribe'), ref, sessionId: sessionIdSchema }),
  z.object({ op: z.literal('activity'), ref }),
  promptSchema.extend({ op: z.literal('prompt'), ref, sessionId: sessionIdSchema }),
  branchSchema.extend({ op: z.literal('branch'), ref, sessionId: sessionIdSchema }),
  navigateSchema.extend({ op: z.literal('navigate'), ref, sessionId: sessionIdSchema }),
  z.object({ op: z.literal('cancel'), ref, sessionId: sessionIdSchema }),
  resumeSchema.extend({ op: z.literal('resume'), ref, sessionId: sessionIdSchema }),
]);
type Frame = z.infer<typeof frameSchema>;

interface Client {
  principal: Principal;
  scope: Scope | null;
  subscriptions: Map<string, Subscription>;
  /** Subscriptions still being set up, by session: a later (un)subscribe of the same session waits for it. */
  pending: Map<string, Promise<void>>;
  activity: Unsubscribe | null;
}

export const WS_PATH = '/v1/ws';
const MAX_FRAME_BYTES = 1_048_576;

@WebSocketGateway({ path: WS_PATH, maxPayload: MAX_FRAME_BYTES })
export class LiveGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger(LiveGateway.name);
  private readonly clients = new Map<WebSocket, Client>();

  constructor(
    private readonly auth: AuthService,
    private readonly sessions: SessionService,
    @InjectConfig() private readonly config: CanopyConfig,
    @Inject(ACTIVITY_FEED) private readonly feed: ActivityFeed,
  ) {}

  get size(): number {
    return this.clients.size;
  }

  async handleConnection(ws: WebSocket, req: IncomingMessage): Promise<void> {
    const early: RawData[] = [];
    ws.on('message', (data) => early.push(data));
    let principal: Principal;
    try {
      const query = Object.fromEntries(new URL(req.url ?? '/', 'http://local').searchParams);
      principal = await this.auth.authenticate(credentialOf({ headers: req.headers, query }, true));
    } catch (err) {
      const { code, message } = describeError(err);
      send(ws, { type: 'error', error: { code, message } });
      close(ws, 1008, code);
      return;
    }
    const client: Client = {
      principal,
      scope: scopeOf(principal),
      subscriptions: new Map(),
      pending: new Map(),
      activity: null,
    };
    this.clients.set(ws, client);
    ws.removeAllListeners('message');
    ws.on('message', (data) => void this.onFrame(ws, client, data));
    for (const data of early) void this.onFrame(ws, client, data);
  }

  handleDisconnect(ws: WebSocket): void {
    const client = this.clients.get(ws);
    if (!client) return;
    this.clients.delete(ws);
    for (const sub of client.subscriptions.values()) sub.unsubscribe();
    void client.activity?.();
  }

  /** Shutdown: every client is told to reconnect (1012 service restart). */
  closeAll(): void {
    for (const ws of this.clients.keys()) close(ws, 1012, 'server restarting');
  }

  private async onFrame(ws: WebSocket, client: Client, data: RawData): Promise<void> {
    let frame: Frame;
    let refValue: string | number | undefined;
    try {
      const json: unknown = JSON.parse(rawText(data));
      refValue = (json as { ref?: string | number } | null)?.ref;
      const unstorable = unstorableTextPath(json);
      if (unstorable) {
        const path = unstorable.join('.');
        throw CanopyException.badRequest('invalid frame', {
          issues: [{ path, message: 'must not contain NUL characters or unpaired surrogates' }],
        });
      }
      const parsed = frameSchema.safeParse(json);
      if (!parsed.success) {
        throw CanopyException.badRequest('invalid frame', {
          issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        });
      }
      frame = parsed.data;
    } catch (err) {
      const error =
        err instanceof SyntaxError ? CanopyException.badRequest('the frame is not valid JSON') : err;
      return this.reply(ws, refValue, error);
    }
    try {
      const afterReply: Array<() => void> = [];
      const result = await this.handle(ws, client, frame, afterReply);
      send(ws, {
        type: 'reply',
        ref: frame.ref,
        ok: true,
        ...(result !== undefined ? { data: result } : {}),
      });
      for (const fn of afterReply) fn();
    } catch (err) {
      this.reply(ws, frame.ref, err);
    }
  }

  /** Handles a frame; `afterReply` runs once its reply has been sent (a subscription's stream follows it). */
  private async handle(
    ws: WebSocket,
    client: Client,
    frame: Frame,
    afterReply: Array<() => void>,
  ): Promise<unknown> {
    if (frame.op === 'activity') {
      if (client.principal.kind === 'user')
        throw new CanopyException('forbidden', 'the activity feed needs a tenant API key');
      if (!client.activity) {
        const tenantId = client.principal.kind === 'admin' ? null : client.scope!.tenantId;
        client.activity = await this.feed.subscribe(tenantId, (event) =>
          send(ws, {
            type: 'activity',
            event: event.type,
            data: { tenantId: event.tenantId, ...event.data, at: event.at },
          }),
        );
      }
      return undefined;
    }
    const scope = client.scope;
    if (!scope) throw new CanopyException('forbidden', 'this needs a tenant API key or a user token');
    switch (frame.op) {
      case 'subscribe': {
        const sessionId = frame.sessionId;
        // Frames race (handling is async): a second subscribe must not open a second subscription.
        while (client.pending.has(sessionId)) await client.pending.get(sessionId);
        const existing = client.subscriptions.get(sessionId);
        if (existing) {
          existing.setMode(frame.mode ?? 'controller');
          return { sessionId, mode: existing.mode };
        }
        if (client.subscriptions.size + client.pending.size >= this.config.limits.wsSubscriptions) {
          throw new CanopyException(
            'rate_limited',
            `at most ${this.config.limits.wsSubscriptions} subscriptions per connection`,
          );
        }
        let settled!: () => void;
        client.pending.set(sessionId, new Promise<void>((resolve) => (settled = resolve)));
        afterReply.push(() => {
          client.pending.delete(sessionId);
          settled();
        });
        // The reply comes first, then the stream it opened (snapshot or missed events): hold frames until then.
        let held: unknown[] | null = [];
        const forward = (f: unknown) => (held ? held.push(f) : send(ws, f));
        afterReply.push(() => {
          const frames = held ?? [];
          held = null;
          for (const f of frames) send(ws, f);
        });
        let sub: Subscription;
        try {
          sub = await this.sessions.subscribe(
            scope,
            sessionId,
            (event) =>
              forward({
                type: 'event',
                sessionId,
                seq: event.seq,
                event: event.type,
                data: event.data,
                at: event.at,
              }),
            {
              mode: frame.mode ?? 'controller',
              ...(frame.after !== undefined ? { after: frame.after } : {}),
              onEnd: (reason) => {
                client.subscriptions.delete(sessionId);
                forward({ type: 'end', sessionId, reason });
              },
            },
          );
        } catch (err) {
          client.pending.delete(sessionId);
          settled();
          throw err;
        }
        if (ws.readyState !== ws.OPEN) {
          sub.unsubscribe();
          return undefined;
        }
        client.subscriptions.set(sessionId, sub);
        return { sessionId, mode: sub.mode };
      }
      case 'unsubscribe':
        while (client.pending.has(frame.sessionId)) await client.pending.get(frame.sessionId);
        client.subscriptions.get(frame.sessionId)?.unsubscribe();
        client.subscriptions.delete(frame.sessionId);
        return undefined;
      case 'prompt':
        return this.run(
          scope,
          frame.sessionId,
          frame,
          await this.sessions.prompt(scope, frame.sessionId, frame),
        );
      case 'branch':
        return this.run(
          scope,
          frame.sessionId,
          frame,
          await this.sessions.branch(scope, frame.sessionId, {
            nodeId: frame.nodeId,
            ...(frame.content !== undefined ? { content: frame.content } : {}),
            ...(frame.maxSteps !== undefined ? { maxSteps: frame.maxSteps } : {}),
          }),
        );
      case 'navigate': {
        const { path, head } = await this.sessions.navigate(scope, frame.sessionId, frame.nodeId);
        return { path, head };
      }
      case 'cancel':
        return this.sessions.cancel(scope, frame.sessionId);
      case 'resume':
        return this.run(
          scope,
          frame.sessionId,
          frame,
          await this.sessions.resume(scope, frame.sessionId, {
            ...(frame.toolUseId !== undefined ? { toolUseId: frame.toolUseId } : {}),
            decision: frame.decision,
          }),
        );
    }
  }

  private async run(
    scope: Scope,
    sessionId: string,
    options: { wait?: boolean; format?: 'turn' | 'json' },
    result: CommandResult,
  ): Promise<unknown> {
    if (!options.wait || result.staged)
      return result.staged ? { runId: result.runId, staged: true } : { runId: result.runId };
    const run = await this.sessions.waitForRun(scope, sessionId, result.runId);
    const turn = this.sessions.toTurnResult(sessionId, run);
    return options.format === 'json' ? turn.toJsonResult() : turn.toJSON();
  }

  private reply(ws: WebSocket, ref: string | number | undefined, err: unknown): void {
    const { status, code, message, details } = describeError(err);
    if (status >= 500) this.logger.error({ err }, 'websocket command failed');
    send(ws, { type: 'reply', ref, ok: false, error: { code, message, ...(details ? { details } : {}) } });
  }
}

function send(ws: WebSocket, frame: unknown): void {
  if (ws.readyState !== ws.OPEN) return;
  corkForThisTurn(ws);
  ws.send(JSON.stringify(frame));
}

const corked = new WeakMap<WebSocket, { socket: Duplex; flush: NodeJS.Immediate }>();

/**
 * Frames sent to a connection in one turn of the event loop (a Redis read delivers many sessions' events at once)
 * leave in one write instead of a syscall each: the socket is corked at the first frame and uncorked once the
 * turn's I/O callbacks are done (setImmediate), or before a close. ws has no public cork, so this reaches its
 * net.Socket; ws corks and uncorks around each frame itself, which nests inside this.
 */
function corkForThisTurn(ws: WebSocket): void {
  if (corked.has(ws)) return;
  const socket = (ws as unknown as { _socket?: Duplex })._socket;
  if (!socket || typeof socket.cork !== 'function') return;
  socket.cork();
  corked.set(ws, { socket, flush: setImmediate(() => uncork(ws)) });
}

function uncork(ws: WebSocket): void {
  const entry = corked.get(ws);
  if (!entry) return;
  corked.delete(ws);
  clearImmediate(entry.flush);
  entry.socket.uncork();
}

/** Closes after the frames sent before it have been written. */
function close(ws: WebSocket, code: number, reason: string): void {
  uncork(ws);
  ws.close(code, reason);
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
