// The WebSocket endpoint (/v1/ws): authenticated once at connection time (`?token=` or Authorization), then JSON
// frames. Client: {op: subscribe|unsubscribe|activity, ...} and any command as {op, ref, sessionId, ...body}.
// Server: {type: "event", sessionId, seq, event, data, at} (`at`: when the event was published, ms since the
// epoch), {type: "activity", event, data} and {type: "reply", ref, ok, data?, error?}. A client never names its
// tenant or user: both come from its credential. The connection lives no longer than its credential: revoked,
// expired (4401 unauthorized) or its tenant disabled (4403 tenant_disabled), it gets an error frame and is closed
// (CredentialWatch), and a frame that arrives meanwhile is refused, not acted on.
//
// Hostile clients are bounded: a connection whose unsent frames pass LIVE_CLIENT_BUFFER_MAX_BYTES (it does not
// read) gets an error frame `slow_consumer` and is closed (1008), destroyed a second later; it resumes with
// `after`. Every frame counts against the credential's and tenant's request budgets (as HTTP requests do), a
// connection that keeps sending past them is closed (1008 rate_limited), and a flood is not read faster than it
// is handled.

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
  refusedInput,
  type Scope,
} from '@canopy/core';
import { CanopyException, InjectConfig, describe as describeError, type CanopyConfig } from '@canopy/common';
import { AuthService, credentialOf, scopeOf, type Grant, type Principal } from '@canopy/auth';
import { SessionManager } from '@canopy/manager';
import { SessionService, type Subscription } from '@canopy/session';
import type { Unsubscribe } from '@canopy/realtime';
import { ThrottlerStorage } from '@nestjs/throttler';
import { chargeRequest } from '../ops/rate-limit.guard';
import { CredentialWatch, type CutReason, type WatchedConnection } from './credential-watch';
import { SessionCommands } from './session-commands';
import { activityView } from './views';

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
  /** Its credential's watch: set when the credential stops being valid, checked before any frame acts. */
  watch: WatchedConnection;
  subscriptions: Map<string, Subscription>;
  /** Subscriptions still being set up, by session: a later (un)subscribe of the same session waits for it. */
  pending: Map<string, Promise<void>>;
  activity: Unsubscribe | null;
  /** Frames being handled now; at MAX_FRAMES_IN_FLIGHT the socket stops reading until one is done. */
  inFlight: number;
  /** Frames refused in a row for the rate limit; past MAX_REFUSED_FRAMES the connection is closed. */
  refused: number;
}

export const WS_PATH = '/v1/ws';
const MAX_FRAME_BYTES = 1_048_576;
/** Frames of one connection handled at once; past it the socket is not read (a flood queues nothing). */
const MAX_FRAMES_IN_FLIGHT = 64;
/** Frames refused in a row for the rate limit before the connection is closed. */
const MAX_REFUSED_FRAMES = 100;
/** Close codes of a connection whose credential stopped being valid. */
const CUT_CLOSE_CODES: Record<CutReason, number> = { unauthorized: 4401, tenant_disabled: 4403 };

@WebSocketGateway({ path: WS_PATH, maxPayload: MAX_FRAME_BYTES })
export class LiveGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger(LiveGateway.name);
  private readonly clients = new Map<WebSocket, Client>();

  constructor(
    private readonly auth: AuthService,
    private readonly sessions: SessionService,
    private readonly manager: SessionManager,
    private readonly commands: SessionCommands,
    private readonly credentials: CredentialWatch,
    @InjectConfig() private readonly config: CanopyConfig,
    @Inject(ThrottlerStorage) private readonly limits: ThrottlerStorage,
  ) {}

  /** Connections cut off for not reading, and frames refused for the rate limit (counted in /metrics). */
  slowConsumersCut = 0;
  framesRefused = 0;

  get size(): number {
    return this.clients.size;
  }

  async handleConnection(ws: WebSocket, req: IncomingMessage): Promise<void> {
    const early: RawData[] = [];
    ws.on('message', (data) => early.push(data));
    let grant: Grant;
    try {
      const query = Object.fromEntries(new URL(req.url ?? '/', 'http://local').searchParams);
      grant = await this.auth.grant(credentialOf({ headers: req.headers, query }, true));
    } catch (err) {
      const { code, message } = describeError(err);
      send(ws, { type: 'error', error: { code, message } });
      close(ws, 1008, code);
      return;
    }
    if (ws.readyState !== ws.OPEN) return; // gone while being authenticated
    const client: Client = {
      principal: grant.principal,
      scope: scopeOf(grant.principal),
      watch: this.credentials.watch(grant, (reason, message) => this.cut(ws, reason, message)),
      subscriptions: new Map(),
      pending: new Map(),
      activity: null,
      inFlight: 0,
      refused: 0,
    };
    this.clients.set(ws, client);
    backpressure.set(ws, {
      maxBytes: this.config.limits.liveClientBufferBytes,
      onCut: () => this.slowConsumersCut++,
    });
    ws.removeAllListeners('message');
    ws.on('message', (data) => void this.onFrame(ws, client, data));
    for (const data of early) void this.onFrame(ws, client, data);
  }

  handleDisconnect(ws: WebSocket): void {
    const client = this.clients.get(ws);
    if (!client) return;
    this.clients.delete(ws);
    client.watch.stop();
    for (const sub of client.subscriptions.values()) sub.unsubscribe();
    client.subscriptions.clear();
    void client.activity?.();
    client.activity = null;
  }

  /**
   * The credential stopped being valid: an error frame, then the close (4401 / 4403). Its subscriptions end now, not
   * when the client acknowledges the close, and a client that does not is dropped a second later.
   */
  private cut(ws: WebSocket, reason: CutReason, message: string): void {
    send(ws, { type: 'error', error: { code: reason, message } });
    close(ws, CUT_CLOSE_CODES[reason], reason);
    this.handleDisconnect(ws);
    setTimeout(() => ws.terminate(), SLOW_CONSUMER_GRACE_MS).unref();
  }

  /** Shutdown: every client is told to reconnect (1012 service restart). */
  closeAll(): void {
    for (const ws of this.clients.keys()) close(ws, 1012, 'server restarting');
  }

  /**
   * Frames count against the credential's and tenant's budgets like HTTP requests. A flood is held back, not
   * queued: past MAX_FRAMES_IN_FLIGHT frames being handled, the socket stops reading until they are done.
   */
  private async onFrame(ws: WebSocket, client: Client, data: RawData): Promise<void> {
    if (++client.inFlight >= MAX_FRAMES_IN_FLIGHT) ws.pause();
    try {
      try {
        await chargeRequest(this.limits, this.config, client.principal);
      } catch (err) {
        return this.refuse(ws, client, refOf(data), err);
      }
      client.refused = 0;
      await this.handleFrame(ws, client, data);
    } finally {
      if (--client.inFlight < MAX_FRAMES_IN_FLIGHT && ws.isPaused) ws.resume();
    }
  }

  private refuse(ws: WebSocket, client: Client, ref: string | number | undefined, err: unknown): void {
    this.reply(ws, ref, err);
    if (!(err instanceof CanopyException && err.code === 'rate_limited')) return;
    this.framesRefused++;
    if (++client.refused > MAX_REFUSED_FRAMES) close(ws, 1008, 'rate_limited');
  }

  private async handleFrame(ws: WebSocket, client: Client, data: RawData): Promise<void> {
    let frame: Frame;
    let refValue: string | number | undefined;
    try {
      const json: unknown = JSON.parse(rawText(data));
      refValue = (json as { ref?: string | number } | null)?.ref;
      const refused = refusedInput(json);
      if (refused) {
        throw CanopyException.badRequest('invalid frame', {
          issues: [{ path: refused.path.join('.'), message: refused.message }],
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
    // Checked last, right before acting: a frame that waited behind a revocation (or an expiry) does nothing.
    const refusal = client.watch.refusal;
    if (refusal) return this.reply(ws, frame.ref, new CanopyException(refusal.code, refusal.message));
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
        const unsubscribe = await this.manager.followActivity(tenantId, (event) =>
          send(ws, { type: 'activity', event: event.type, data: activityView(event) }),
        );
        // Closed (or cut) meanwhile: nobody would stop this feed later.
        if (!this.clients.has(ws) || client.activity) void unsubscribe();
        else client.activity = unsubscribe;
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
        return (await this.commands.prompt(scope, frame.sessionId, frame)).body;
      case 'branch':
        return (await this.commands.branch(scope, frame.sessionId, frame)).body;
      case 'navigate':
        return this.commands.navigate(scope, frame.sessionId, frame.nodeId);
      case 'cancel':
        return this.commands.cancel(scope, frame.sessionId);
      case 'resume':
        return (await this.commands.resume(scope, frame.sessionId, frame)).body;
    }
  }

  private reply(ws: WebSocket, ref: string | number | undefined, err: unknown): void {
    const { status, code, message, details } = describeError(err);
    if (status >= 500) this.logger.error({ err }, 'websocket command failed');
    send(ws, { type: 'reply', ref, ok: false, error: { code, message, ...(details ? { details } : {}) } });
  }
}

/** Per connection: how many bytes may wait for the client, and what to count when it is cut off. */
const backpressure = new WeakMap<WebSocket, { maxBytes: number; onCut: () => void }>();
/** How long a cut-off client has to take its close frame before its connection is destroyed. */
const SLOW_CONSUMER_GRACE_MS = 1_000;

function send(ws: WebSocket, frame: unknown): void {
  if (ws.readyState !== ws.OPEN) return;
  // Checked before the write, so one large frame (a snapshot) still goes out whole to a client that reads.
  const limit = backpressure.get(ws);
  if (limit && ws.bufferedAmount > limit.maxBytes) {
    limit.onCut();
    backpressure.delete(ws);
    ws.send(
      JSON.stringify({
        type: 'error',
        error: {
          code: 'slow_consumer',
          message: `more than ${limit.maxBytes} bytes waited for this client: reconnect and resume with after`,
        },
      }),
    );
    close(ws, 1008, 'slow_consumer');
    setTimeout(() => ws.terminate(), SLOW_CONSUMER_GRACE_MS).unref();
    return;
  }
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

/** The ref of a frame, when it is JSON with one (to answer a refused frame); cheap for any input. */
function refOf(data: RawData): string | number | undefined {
  try {
    const ref = (JSON.parse(rawText(data)) as { ref?: unknown } | null)?.ref;
    return typeof ref === 'string' || typeof ref === 'number' ? ref : undefined;
  } catch {
    return undefined;
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
