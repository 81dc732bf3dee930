// The tree of a session and its views: nodes, children, siblings, paths, the active path's messages, UI turns.

import { Controller, Get, Inject, Param, ParseIntPipe, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  allTurns,
  getTurn,
  sumUsage,
  TurnProjectionError,
  turnsQuerySchema,
  withRunErrors,
  type Scope,
  type Tree,
} from '@canopy/core';
import { CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import { CurrentScope } from '@canopy/auth';
import { contextPolicyOf, contextView, modelLimits, ToolRegistry } from '@canopy/agent';
import { enabledServerTools, SessionService } from '@canopy/session';
import { createZodDto } from 'nestjs-zod';
import { ContextQueryDto, ContextViewDto } from './dto';
import { nodeView } from './views';

/** GET …/turns's query: a page of earlier turns (`before`, `limit`). */
class TurnsQueryDto extends createZodDto(turnsQuerySchema) {}

const nodeIdPipe = new ParseIntPipe({
  exceptionFactory: () => CanopyException.badRequest('nodeId must be an integer', { field: 'nodeId' }),
});

@ApiTags('tree')
@ApiBearerAuth()
@Controller('v1/sessions/:id')
export class TreeController {
  constructor(
    private readonly sessions: SessionService,
    private readonly tools: ToolRegistry,
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
  ) {}

  @Get('tree')
  @ApiOperation({ summary: 'Every node, the active path, cursors, roots, head and total usage' })
  async tree(@CurrentScope() scope: Scope, @Param('id') id: string) {
    const { tree } = await this.sessions.loadTree(scope, id);
    const data = tree.toJSON();
    return {
      nodes: data.nodes.map(nodeView),
      path: data.path,
      cursors: tree.selectedChildren(),
      roots: tree.roots(),
      head: tree.head,
      usage: sumUsage(data.nodes.map((n) => n.usage)),
    };
  }

  @Get('nodes/:nodeId')
  @ApiOperation({ summary: 'One node' })
  async node(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
  ) {
    const tree = await this.treeOf(scope, id);
    return nodeView(this.existing(tree, nodeId));
  }

  @Get('nodes/:nodeId/children')
  @ApiOperation({ summary: 'Ids of the node’s children, ascending' })
  async children(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
  ) {
    const tree = await this.treeOf(scope, id);
    this.existing(tree, nodeId);
    return { ids: tree.children(nodeId) };
  }

  @Get('nodes/:nodeId/siblings')
  @ApiOperation({ summary: 'Ids of the node’s siblings (for a root: the other roots)' })
  async siblings(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
  ) {
    const tree = await this.treeOf(scope, id);
    this.existing(tree, nodeId);
    return { ids: tree.siblings(nodeId) };
  }

  @Get('nodes/:nodeId/path')
  @ApiOperation({ summary: 'Ids from the root to the node' })
  async path(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
  ) {
    const tree = await this.treeOf(scope, id);
    this.existing(tree, nodeId);
    return { ids: tree.pathTo(nodeId) };
  }

  @Get('messages')
  @ApiOperation({ summary: 'Messages along the active path' })
  async messages(@CurrentScope() scope: Scope, @Param('id') id: string) {
    return { data: (await this.treeOf(scope, id)).messages() };
  }

  @Get('turns')
  @ApiOperation({
    summary:
      'The active path as UI turns (edits and regenerations included; status "error" with the error when the turn’s last run — its latest regeneration — failed); with `before` and `limit`, a page of them (what a live view loads as its user scrolls up: `hasEarlier` says whether turns come before the page)',
  })
  async turns(@CurrentScope() scope: Scope, @Param('id') id: string, @Query() query: TurnsQueryDto) {
    const tree = await this.treeOf(scope, id);
    let turns;
    try {
      turns = allTurns(tree);
    } catch (err) {
      if (err instanceof TurnProjectionError) throw new CanopyException('internal', err.message);
      throw err;
    }
    let end = turns.length;
    if (query.before !== undefined) {
      // Node ids grow along a path: the turns before the node are those whose first node is older.
      if (!tree.path.includes(query.before)) throw CanopyException.notFound('node');
      end = turns.findIndex((t) => t.id !== null && t.id >= query.before!);
      if (end === -1) end = turns.length;
    }
    const start = query.limit === undefined ? 0 : Math.max(0, end - query.limit);
    const page = turns.slice(start, end);
    return { data: withRunErrors(page, await this.sessions.failedTurns(scope, id)), hasEarlier: start > 0 };
  }

  @Get('turns/:nodeId')
  @ApiOperation({
    summary: 'The turn starting at a user node of the active path (status "error" when its last run failed)',
  })
  async turn(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
  ) {
    const turn = getTurn(await this.treeOf(scope, id), nodeId);
    if (!turn) throw CanopyException.notFound('turn');
    const [marked] = withRunErrors([turn], await this.sessions.failedTurns(scope, id));
    return marked;
  }

  @Get('context')
  @ApiOperation({
    summary:
      'What the next run from a node (default: the head) would send under the session’s context policy (opts.context): the messages of the path it sends with their tokens, the tokens of the whole request against the model’s window, and whether it fits',
  })
  @ApiOkResponse({ type: ContextViewDto })
  async context(@CurrentScope() scope: Scope, @Param('id') id: string, @Query() query: ContextQueryDto) {
    const { session, tree } = await this.sessions.loadTree(scope, id);
    const nodeId = query.nodeId ?? tree.head;
    if (nodeId !== null) this.existing(tree, nodeId);
    const path =
      nodeId === null ? [] : tree.pathTo(nodeId).map((n) => ({ id: n, message: tree.getNode(n)!.message }));
    return contextView({
      nodeId,
      path,
      model: session.model,
      system: session.system,
      opts: session.opts,
      tools: this.tools.specsFor(enabledServerTools(session.opts), session.tools),
      limits: modelLimits(session.model, session.opts, this.config.modelLimits),
      summaries:
        contextPolicyOf(session.opts).strategy === 'summarize'
          ? await this.sessions.summariesOn(
              scope,
              id,
              path.map((n) => n.id),
            )
          : [],
    });
  }

  private async treeOf(scope: Scope, id: string): Promise<Tree> {
    return (await this.sessions.loadTree(scope, id)).tree;
  }

  private existing(tree: Tree, nodeId: number) {
    const node = tree.getNode(nodeId);
    if (!node) throw CanopyException.notFound('node');
    return node;
  }
}
