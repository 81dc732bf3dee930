// Opening a stored session with start options reconciles them with what was persisted, field
// by field: the persisted model wins unless it can no longer be used; system, opts and tools from
// the start options win; the title is the persisted one only.

import type { ClientTool } from '@canopy/core';
import { CanopyException } from '@canopy/common';

export interface PersistedState {
  model: string;
  system: string | null;
  opts: Record<string, unknown>;
  tools: ClientTool[];
  title: string | null;
}

export interface StartOptions {
  model?: string;
  system?: string | null;
  opts?: Record<string, unknown>;
  tools?: ClientTool[];
  /** Ignored on load: the persisted title wins. */
  title?: string | null;
}

/** `usable(model)` says whether a model string can be used here (provider known and configured). */
export function reconcile(
  persisted: PersistedState,
  start: StartOptions,
  usable: (model: string) => boolean,
): PersistedState {
  let model: string;
  if (usable(persisted.model)) model = persisted.model;
  else if (start.model !== undefined && usable(start.model)) model = start.model;
  else
    throw CanopyException.badRequest(
      start.model !== undefined
        ? `no usable model: neither the persisted "${persisted.model}" nor "${start.model}"`
        : `no usable model: "${persisted.model}" cannot be used here and no start model was given`,
      { field: 'model' },
    );
  return {
    model,
    system: start.system !== undefined ? start.system : persisted.system,
    opts: start.opts ?? persisted.opts,
    tools: start.tools ?? persisted.tools,
    title: persisted.title,
  };
}
