// Runs the registered hooks. Pre: sequential hooks in order, each seeing the injections of
// those before it (a halt or a throw stops the run), then parallel hooks together (a throw or a timeout skips
// that hook); injections are collected in order and their size is capped (≈ chars / 4 tokens) so hooks cannot
// crowd out the conversation: the hook whose injection crosses the budget halts the run. Post: in order; a halt
// stops the tool loop; a throw counts as continue.

import { joinText, type Block, type Message } from '@canopy/core';
import type { HookTurn, PostHook, PreHook } from './hook';

/** Why pre-hooks stopped a run: a halt, a sequential hook that threw, injections over the budget. */
export type HaltCode = 'hook_halted' | 'hook_failed' | 'injection_overflow';

export type PreHooksOutcome =
  { halted: false; injections: Block[] } | { halted: true; code: HaltCode; hook: string; reason: string };
export type PostHooksOutcome = { halted: false } | { halted: true; hook: string; reason: string };

export interface HookRegistryOptions {
  parallelTimeoutMs: number;
  /** Largest estimated token count (chars / 4) of all injections of one model call. */
  injectionBudgetTokens: number;
}

export class HookRegistry {
  private readonly pre: PreHook[] = [];
  private readonly post: PostHook[] = [];

  constructor(
    private readonly options: HookRegistryOptions = {
      parallelTimeoutMs: 5_000,
      injectionBudgetTokens: 4_000,
    },
  ) {}

  register(hook: PreHook | PostHook): this {
    const all = [...this.pre, ...this.post];
    if (all.some((h) => h.name === hook.name)) throw new Error(`hook "${hook.name}" is registered twice`);
    if (hook.phase === 'pre') this.pre.push(hook);
    else this.post.push(hook);
    return this;
  }

  get size(): number {
    return this.pre.length + this.post.length;
  }

  async runPre(turn: HookTurn): Promise<PreHooksOutcome> {
    const injections: Block[] = [];
    const overflow = (hook: string): PreHooksOutcome | null => {
      const tokens = Math.ceil(joinText(injections).length / 4);
      if (tokens <= this.options.injectionBudgetTokens) return null;
      return {
        halted: true,
        code: 'injection_overflow',
        hook,
        reason: `hook injections (~${tokens} tokens) exceed the budget of ${this.options.injectionBudgetTokens}`,
      };
    };
    for (const hook of this.pre.filter((h) => h.mode === 'sequential')) {
      let result;
      try {
        result = await hook.run({ ...turn, injections: [...injections] });
      } catch (err) {
        return { halted: true, code: 'hook_failed', hook: hook.name, reason: errorMessage(err) };
      }
      if (result.action === 'halt') {
        return { halted: true, code: 'hook_halted', hook: hook.name, reason: result.reason };
      }
      if (result.inject) injections.push(...result.inject);
      const over = overflow(hook.name);
      if (over) return over;
    }
    const parallel = this.pre.filter((h) => h.mode === 'parallel');
    const before = [...injections];
    const settled = await Promise.all(
      parallel.map((hook) =>
        withTimeout(
          Promise.resolve().then(() => hook.run({ ...turn, injections: before })),
          hook.timeoutMs ?? this.options.parallelTimeoutMs,
        ).catch(
          () => null, // a failing or slow parallel hook is skipped
        ),
      ),
    );
    for (const [i, result] of settled.entries()) {
      if (!result) continue;
      const name = parallel[i]!.name;
      if (result.action === 'halt')
        return { halted: true, code: 'hook_halted', hook: name, reason: result.reason };
      if (result.inject) injections.push(...result.inject);
      const over = overflow(name);
      if (over) return over;
    }
    return { halted: false, injections };
  }

  async runPost(turn: HookTurn & { assistantMessage: Message }): Promise<PostHooksOutcome> {
    for (const hook of this.post) {
      try {
        const result = await hook.run(turn);
        if (result.action === 'halt') return { halted: true, hook: hook.name, reason: result.reason };
      } catch {
        // a failing post-hook does not stop the run
      }
    }
    return { halted: false };
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
