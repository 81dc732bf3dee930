// A followed run written to the response as the AI SDK's UI message stream, through the SDK's own helpers
// (createUIMessageStream, pipeUIMessageStreamToResponse: SSE with `x-vercel-ai-ui-message-stream: v1`, keep-alive
// comments, `[DONE]`). The run's `finish` waits for its commit so that its metadata names the reply's node and the
// versions of its turn. The stream ends with the run; a client that leaves only stops following it (the run goes
// on, and GET …/stream resumes it).

import { Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { createUIMessageStream, pipeUIMessageStreamToResponse } from 'ai';
import { isTurnBoundary, type ClientTool, type InFlight, type Scope } from '@canopy/core';
import { SseRegistry } from '../http/sse';
import { FrontendChats, type FollowedRun } from './frontend-chats.service';
import { ProtocolStream } from './protocol-stream';
import { UiMessageChunks, type UiChunk, type UiMessageMetadata } from './ui-message-chunks';
import { versionsOf, type CanopyUiMessage } from './ui-messages';

const KEEP_ALIVE_MS = 15_000;

@Injectable()
export class UiMessageStream {
  private readonly logger = new Logger('UiMessageStream');

  constructor(
    private readonly chats: FrontendChats,
    private readonly streams: SseRegistry,
  ) {}

  pipe(
    scope: Scope,
    id: string,
    run: FollowedRun,
    req: Request,
    res: Response,
    options: { tools: readonly ClientTool[]; replay?: { inFlight: InFlight; paused: boolean } },
  ): void {
    const chunks = new UiMessageChunks(run.runId, options.tools);
    const stream = createUIMessageStream<CanopyUiMessage>({
      execute: async ({ writer }) => {
        const write = (list: UiChunk[]) => list.forEach((chunk) => writer.write(chunk));
        write(chunks.start());
        if (options.replay) write(chunks.replay(options.replay.inFlight, options.replay.paused));
        if (chunks.ended) return;
        for await (const event of run.feed) {
          if (chunks.finishing) {
            // The run stopped: its finish once its commit is in the tree (or failed to be).
            if (event.type === 'tree' || event.type === 'store') {
              write(chunks.finish(await this.placeOfReply(scope, id)));
              return;
            }
            continue;
          }
          write(chunks.map(event));
          if (chunks.ended) return;
        }
        // The feed ended first: the session or the credential ended under the stream, or the client left.
        if (chunks.finishing) write(chunks.finish(null));
        else if (!chunks.ended && run.feed.endedBy) {
          writer.write({ type: 'error', errorText: `${run.feed.endedBy}: the stream was ended` });
        } else if (!chunks.ended) writer.write({ type: 'abort', reason: 'closed' });
      },
      onError: (err) => {
        this.logger.warn(`the UI message stream of session ${id} failed: ${String(err)}`);
        return 'internal error';
      },
    });
    res.once('close', () => run.close());
    new ProtocolStream(req, res, this.streams, (reason) => run.feed.end(reason), true);
    void pipeUIMessageStreamToResponse({
      response: res,
      stream,
      keepAliveMs: KEEP_ALIVE_MS,
      headers: { 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
    }).finally(() => run.close());
  }

  /** Where the reply just committed stands: its first node and the versions of its turn (null if unknown). */
  private async placeOfReply(scope: Scope, id: string): Promise<UiMessageMetadata | null> {
    try {
      const tree = await this.chats.liveTree(scope, id);
      const path = tree.path;
      for (let i = path.length - 1; i >= 0; i--) {
        if (!isTurnBoundary(tree.getNode(path[i]!)!.message)) continue;
        const reply = path[i + 1];
        return reply === undefined ? null : versionsOf(tree, reply);
      }
      return null;
    } catch (err) {
      this.logger.warn(`could not place the reply committed in session ${id}: ${String(err)}`);
      return null;
    }
  }
}
