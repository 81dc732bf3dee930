// The jest functions the contract suites use, taken from jest's globals when a suite is defined. Importing
// '@jest/globals' would throw outside jest (these modules are the `@canopy/realtime/testing` entry, which any
// code may import), so only its types are imported here.

import type { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

export interface JestApi {
  describe: typeof describe;
  it: typeof it;
  expect: typeof expect;
  beforeEach: typeof beforeEach;
  afterEach: typeof afterEach;
}

export function jestApi(): JestApi {
  const api = globalThis as Partial<JestApi>;
  if (!api.describe || !api.it || !api.expect || !api.beforeEach || !api.afterEach) {
    throw new Error('The realtime contract suites are defined inside a jest test file only');
  }
  return api as JestApi;
}
