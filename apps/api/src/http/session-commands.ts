// The commands on a session as the API answers them, over HTTP (CommandsController) and WebSocket (LiveGateway)
// alike: prompt, branch and resume answer 202 {runId} at once (`staged` when a prompt was steered onto the busy
// run, `queued` when it waits in the session's queue), or with `wait: true` 200 and the run's TurnResult (or the snake_case JsonResult for `format: "json"`) once
// it completes, pauses, fails or is cancelled; navigate and cancel answer 200 with what they did. Attachment URLs
// in the content are checked by the SSRF guard first (400 on the block's `url`; downloads check again); stored
// files (`fileId`) and inline data are taken by the attachment intake (checked, stored as files, referred to by
// the session; 400 attachment_unsupported for a type the session's model cannot take).

import { Inject, Injectable } from '@nestjs/common';
import { assertTargetAllowed, CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import type { MessageContent, NodeId, Scope } from '@canopy/core';
import { AttachmentIntake } from '@canopy/agent';
import { FilesService } from '@canopy/store';
import { SessionService, type CommandResult, type PromptInput, type ResumeInput } from '@canopy/session';

export interface WaitOptions {
  wait?: boolean;
  format?: 'turn' | 'json';
}

export interface BranchCommand extends WaitOptions {
  nodeId: NodeId | null;
  content?: MessageContent;
  maxSteps?: number;
}

export interface ResumeCommand extends WaitOptions {
  toolUseId?: string;
  decision: ResumeInput['decision'];
}

/** What a command answers: the HTTP status it maps to, and the body (a WebSocket reply's `data`). */
export interface CommandAnswer {
  status: 200 | 202;
  body: unknown;
}

@Injectable()
export class SessionCommands {
  private readonly attachments: AttachmentIntake;

  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly sessions: SessionService,
    files: FilesService,
  ) {
    this.attachments = new AttachmentIntake(files);
  }

  async prompt(scope: Scope, id: string, input: PromptInput & WaitOptions): Promise<CommandAnswer> {
    await this.checkAttachmentUrls(input.content, 'content');
    const content = await this.takeAttachments(scope, id, input.content, 'content');
    return this.answer(
      scope,
      id,
      input,
      await this.sessions.prompt(scope, id, { ...input, content: content! }),
    );
  }

  async branch(scope: Scope, id: string, input: BranchCommand): Promise<CommandAnswer> {
    await this.checkAttachmentUrls(input.content, 'content');
    const content = await this.takeAttachments(scope, id, input.content, 'content');
    const result = await this.sessions.branch(scope, id, {
      nodeId: input.nodeId,
      ...(content !== undefined ? { content } : {}),
      ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
    });
    return this.answer(scope, id, input, result);
  }

  async resume(scope: Scope, id: string, input: ResumeCommand): Promise<CommandAnswer> {
    let decision = input.decision;
    if (decision.type === 'result') {
      await this.checkAttachmentUrls(decision.content, 'decision.content');
      decision = {
        ...decision,
        content: (await this.takeAttachments(scope, id, decision.content, 'decision.content'))!,
      };
    }
    const result = await this.sessions.resume(scope, id, {
      ...(input.toolUseId !== undefined ? { toolUseId: input.toolUseId } : {}),
      decision,
    });
    return this.answer(scope, id, input, result);
  }

  async navigate(scope: Scope, id: string, nodeId: NodeId | null) {
    const { path, head } = await this.sessions.navigate(scope, id, nodeId);
    return { path, head };
  }

  cancel(scope: Scope, id: string): Promise<CommandResult> {
    return this.sessions.cancel(scope, id);
  }

  cancelQueued(scope: Scope, id: string, queueId: string): Promise<void> {
    return this.sessions.cancelQueued(scope, id, queueId);
  }

  /** The content with its stored and inline attachments taken (unchanged when it has none). */
  private async takeAttachments(
    scope: Scope,
    id: string,
    content: MessageContent | undefined,
    field: string,
  ): Promise<MessageContent | undefined> {
    if (!AttachmentIntake.involves(content)) return content;
    // The session's model decides which types are taken (404 for a session the scope does not reach).
    const session = await this.sessions.get(scope, id);
    return this.attachments.take(scope, id, session.model, content, field);
  }

  /** 400 on the first attachment URL (`<field>.<index>.url`) that leads where tenant URLs may not. */
  private async checkAttachmentUrls(content: MessageContent | undefined, field: string): Promise<void> {
    if (content === undefined || typeof content === 'string') return;
    for (const [index, block] of content.entries()) {
      if (block.type !== 'attachment' || block.url === undefined) continue;
      await assertTargetAllowed(
        block.url,
        this.config.targets.tenantUrls,
        `${field}.${index}.url`,
        'attachment URL',
      );
    }
  }

  private async answer(
    scope: Scope,
    id: string,
    options: WaitOptions,
    result: CommandResult,
  ): Promise<CommandAnswer> {
    // Staged on a busy run, or queued behind it: answered at once (a queued prompt's run has the runId).
    if (!options.wait || result.staged || result.queued) {
      const flag = result.staged ? { staged: true } : result.queued ? { queued: true } : {};
      return { status: 202, body: { runId: result.runId, ...flag } };
    }
    const run = await this.sessions.waitForRun(scope, id, result.runId);
    const turn = this.sessions.toTurnResult(id, run);
    return { status: 200, body: options.format === 'json' ? turn.toJsonResult() : turn.toJSON() };
  }
}
