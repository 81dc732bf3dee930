// What the frontend protocols share: the session a chat or thread id names (created on first use, in the caller's
// scope), a run started with its events followed from before its start, and the run in flight followed from its
// start for a client that comes back. Runs are Canopy's own commands (SessionCommands: the SSRF guard on
// attachment URLs included); the protocols only translate the one event stream.

import { Inject, Injectable } from '@nestjs/common';
import { CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import type { ClientTool, InFlight, Scope, SessionSnapshot, Tree } from '@canopy/core';
import { SessionManager } from '@canopy/manager';
import { SessionService } from '@canopy/session';
import type { ClientRunRecord, SessionRecord } from '@canopy/store';
import type { CommandAnswer, ResumeCommand } from '../http/session-commands';
import { RunFeed } from './run-feed';

/** What a session created on first use takes from the request. */
export interface NewSessionInput {
  model?: string;
  system?: string;
  opts?: Record<string, unknown>;
  tools?: ClientTool[];
}

/** A run followed: its events in order, and how to stop following it. */
export interface FollowedRun {
  runId: string;
  feed: RunFeed;
  close(): void;
}

@Injectable()
export class FrontendChats {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly sessions: SessionService,
    private readonly manager: SessionManager,
  ) {}

  /**
   * The session `id` of the caller, created on first use with the request's model (or DEFAULT_MODEL), system, opts
   * and client tools. Ids are per tenant: another tenant's session of the same id is never seen (this one is the
   * caller's own). Another user's session of the tenant answers not_found, like every route.
   */
  async ensureSession(scope: Scope, id: string, input: NewSessionInput): Promise<SessionRecord> {
    const found = await this.find(scope, id);
    if (found) return found;
    const model = input.model ?? this.config.defaultModel;
    if (!model) {
      throw CanopyException.badRequest(
        'no session has this id yet and the request names no model: send `model`, or set DEFAULT_MODEL',
        { field: 'model' },
      );
    }
    try {
      await this.manager.create(scope, {
        id,
        model,
        ...(input.system !== undefined ? { system: input.system } : {}),
        ...(input.opts !== undefined ? { opts: input.opts } : {}),
        ...(input.tools !== undefined ? { tools: input.tools } : {}),
      });
    } catch (err) {
      if (!(err instanceof CanopyException && err.code === 'already_exists')) throw err;
      // Made meanwhile by a request like this one (then it is the caller's), or another user's.
    }
    const created = await this.find(scope, id);
    if (!created) throw CanopyException.notFound('session');
    return created;
  }

  /**
   * The run `start` begins, its events followed from before it starts (nothing of it is missed); `clientRunId`, the
   * id the client gave the run, is recorded with it (what a later input names as its parent run).
   */
  async startRun(
    scope: Scope,
    id: string,
    start: () => Promise<CommandAnswer>,
    clientRunId?: string,
  ): Promise<FollowedRun> {
    const feed = new RunFeed();
    const subscription = await this.sessions.subscribe(scope, id, (event) => feed.push(event), {
      mode: 'observer',
      onEnd: (reason) => feed.end(reason),
    });
    try {
      const answer = await start();
      const { runId } = answer.body as { runId: string };
      feed.follow(runId);
      if (clientRunId !== undefined) await this.sessions.setClientRunId(scope, id, runId, clientRunId);
      return { runId, feed, close: () => (subscription.unsubscribe(), feed.close()) };
    } catch (err) {
      subscription.unsubscribe();
      throw err;
    }
  }

  /**
   * A protocol's answers to the calls a paused run waits for, all in one request (answered in part, the run would go
   * on waiting, and the stream with it), given to the run in turn; the last one resumes it, and the run is followed
   * from there. `field` names where the request's answers are, for the refusal of a partial answer.
   */
  async answerAll(
    scope: Scope,
    id: string,
    inFlight: InFlight,
    decisions: readonly ResumeCommand[],
    field: string,
    resume: (decision: ResumeCommand) => Promise<CommandAnswer>,
    clientRunId?: string,
  ): Promise<FollowedRun> {
    if (decisions.length === 0) {
      throw new CanopyException('session_paused', 'a run is waiting for a decision', {
        awaiting: inFlight.awaiting.map((u) => ({ toolCallId: u.id, toolName: u.name })),
      });
    }
    if (decisions.length < inFlight.awaiting.length) {
      const answered = new Set(decisions.map((d) => d.toolUseId));
      throw CanopyException.badRequest('answer every tool call the run waits for, in one request', {
        field,
        missing: inFlight.awaiting.filter((u) => !answered.has(u.id)).map((u) => u.id),
      });
    }
    for (const d of decisions.slice(0, -1)) await resume(d);
    const final = decisions[decisions.length - 1]!;
    return this.startRun(scope, id, () => resume(final), clientRunId);
  }

  /**
   * The run in flight (busy or paused) with the state it started from — the snapshot's `inFlight`: what it has done
   * so far — and its later events; null when the session is idle.
   */
  async followInFlight(
    scope: Scope,
    id: string,
  ): Promise<(FollowedRun & { inFlight: InFlight; snapshot: SessionSnapshot }) | null> {
    const feed = new RunFeed();
    let snapshot: SessionSnapshot | null = null;
    // The snapshot is delivered before subscribe returns, atomically with the start of the stream.
    const subscription = await this.sessions.subscribe(
      scope,
      id,
      (event) => {
        if (event.type === 'snapshot' && snapshot === null) snapshot = event.data;
        else feed.push(event);
      },
      { mode: 'observer', onEnd: (reason) => feed.end(reason) },
    );
    const taken = snapshot as SessionSnapshot | null;
    const inFlight = taken?.inFlight ?? null;
    if (!taken || !inFlight) {
      subscription.unsubscribe();
      return null;
    }
    feed.follow(inFlight.runId);
    return {
      runId: inFlight.runId,
      inFlight,
      snapshot: taken,
      feed,
      close: () => (subscription.unsubscribe(), feed.close()),
    };
  }

  /** The session's whole tree and its run in flight (a read: nothing is made live). */
  async conversation(
    scope: Scope,
    id: string,
  ): Promise<{ tree: Tree; session: SessionRecord; inFlight: InFlight | null }> {
    const { inFlight } = await this.manager.describe(scope, id);
    const { session, tree } = await this.sessions.loadTree(scope, id);
    return { tree, session, inFlight };
  }

  /** The committed tree of the live session (its recent part), as it is once a run's commit was applied. */
  async liveTree(scope: Scope, id: string): Promise<Tree> {
    return (await this.sessions.liveSession(scope, id)).tree;
  }

  /**
   * The session's whole committed tree: a copy of the live session's when it holds it all (a session within
   * LIVE_PATH_NODES), else read from the store.
   */
  async tree(scope: Scope, id: string): Promise<Tree> {
    const live = await this.sessions.liveSession(scope, id);
    if (live.holdsWholeTree) return live.tree.clone();
    return (await this.sessions.loadTree(scope, id)).tree;
  }

  /** The run in flight (a read: nothing is made live); null when idle. */
  async inFlight(scope: Scope, id: string): Promise<InFlight | null> {
    return (await this.manager.describe(scope, id)).inFlight;
  }

  /** The session's run the client named `clientRunId`, with the head its last commit left; null when none. */
  clientRun(scope: Scope, id: string, clientRunId: string): Promise<ClientRunRecord | null> {
    return this.sessions.runByClientId(scope, id, clientRunId);
  }

  /** The caller's session `id`; null when there is none (or it is another user's). */
  async find(scope: Scope, id: string): Promise<SessionRecord | null> {
    try {
      return await this.sessions.get(scope, id);
    } catch (err) {
      if (err instanceof CanopyException && err.code === 'not_found') return null;
      throw err;
    }
  }
}
