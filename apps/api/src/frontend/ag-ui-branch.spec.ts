// Where a new AG-UI user message goes: the message before it decides when it names a node off the head, else the
// run parentRunId names (after the head its last commit left), else the active path; a branch only after a reply.

import { CanopyException } from '@canopy/common';
import { assistantMessage, toolResultMessage, Tree, userMessage } from '@canopy/core';
import { branchPointOf } from './ag-ui-branch';

/** 1 user, 2 reply, 3 user, 4 reply (the head). */
function conversation(): Tree {
  return new Tree()
    .push(userMessage('one'))
    .push(assistantMessage('reply one'))
    .push(userMessage('two'))
    .push(assistantMessage('reply two'));
}

function refusal(f: () => unknown): { code: string; details: unknown } {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(CanopyException);
    const e = err as CanopyException;
    return { code: e.code, details: e.details };
  }
  throw new Error('expected a refusal');
}

describe('branchPointOf', () => {
  it('continues the active path when nothing names an earlier node', () => {
    const tree = conversation();
    expect(branchPointOf(tree, undefined, undefined)).toBeNull();
    expect(branchPointOf(tree, 4, undefined)).toBeNull();
    // A parent run that ended at the head: the same thing.
    expect(branchPointOf(tree, 4, { headNode: 4 })).toBeNull();
    expect(branchPointOf(tree, undefined, { headNode: 4 })).toBeNull();
  });

  it('branches after the reply the parent run ended at', () => {
    const tree = conversation();
    expect(branchPointOf(tree, undefined, { headNode: 2 })).toBe(2);
    // The message before is the head: the client sent the path it holds, parentRunId decides.
    expect(branchPointOf(tree, 4, { headNode: 2 })).toBe(2);
  });

  it('lets the message before the new one win over parentRunId when it names a node off the head', () => {
    const tree = conversation();
    expect(branchPointOf(tree, 2, undefined)).toBe(2);
    expect(branchPointOf(tree, 2, { headNode: 4 })).toBe(2);
    // Even when the parent run committed nothing: it is not used.
    expect(branchPointOf(tree, 2, { headNode: null })).toBe(2);
  });

  it('refuses a parent run with no reply to branch after, naming parentRunId', () => {
    const tree = conversation();
    for (const headNode of [null, 99, 3]) {
      expect(refusal(() => branchPointOf(tree, undefined, { headNode }))).toEqual({
        code: 'bad_request',
        details: { field: 'parentRunId' },
      });
    }
  });

  it('refuses a branch after a reply with tool calls, naming the field that chose it', () => {
    const tree = conversation()
      .push(userMessage('three'))
      .push(assistantMessage([{ type: 'tool_use', id: 't1', name: 'calc', input: {} }]))
      .push(toolResultMessage([{ type: 'tool_result', toolUseId: 't1', content: '2', isError: false }]))
      .push(assistantMessage('it is 2'));
    expect(refusal(() => branchPointOf(tree, undefined, { headNode: 6 })).details).toEqual({
      field: 'parentRunId',
    });
    expect(refusal(() => branchPointOf(tree, 6, undefined)).details).toEqual({ field: 'messages' });
    expect(refusal(() => branchPointOf(tree, 1, { headNode: 2 })).details).toEqual({ field: 'messages' });
  });
});
