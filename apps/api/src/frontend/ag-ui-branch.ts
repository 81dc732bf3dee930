// Where a new AG-UI user message goes in the thread's tree: on the active path, or a branch after an earlier node
// that the input names, either by the id of the message before it or by its parentRunId (a run of this thread,
// after the head its last commit left).

import { CanopyException } from '@canopy/common';
import { toolUses, type NodeId, type Tree } from '@canopy/core';

/** The run an input's parentRunId names: where its last commit left the head (null: it committed nothing). */
export interface ParentRun {
  headNode: NodeId | null;
}

/**
 * The node the new message branches after, or null when it continues the active path. The message before it decides
 * when it names a node other than the head: it is the more precise of the two (the reply the user picked), so a
 * parentRunId beside it is not used. Otherwise the parent run decides, when the input names one. A message before it
 * that is the head (the client sent the path it holds) or that the tree does not hold names no branch point; neither
 * does a parent run that ended at the head. A branch goes after an assistant reply without tool calls: else a 400
 * naming the field that chose it (`messages` or `parentRunId`).
 */
export function branchPointOf(
  tree: Tree,
  before: NodeId | undefined,
  parent: ParentRun | undefined,
): NodeId | null {
  if (before !== undefined && before !== tree.head) return replyToBranchAfter(tree, before, 'messages');
  if (!parent) return null;
  if (parent.headNode === null || !tree.has(parent.headNode)) {
    throw CanopyException.badRequest('the run parentRunId names committed no reply to branch after', {
      field: 'parentRunId',
    });
  }
  if (parent.headNode === tree.head) return null;
  return replyToBranchAfter(tree, parent.headNode, 'parentRunId');
}

function replyToBranchAfter(tree: Tree, nodeId: NodeId, field: 'messages' | 'parentRunId'): NodeId {
  const node = tree.getNode(nodeId)!;
  if (node.message.role !== 'assistant' || toolUses(node.message).length > 0) {
    throw CanopyException.badRequest(
      field === 'messages'
        ? 'a branch goes after an assistant reply: the message before the new one must be a reply without tool calls'
        : 'a branch goes after an assistant reply: the run parentRunId names ended on a message that is not a reply without tool calls',
      { field },
    );
  }
  return nodeId;
}
