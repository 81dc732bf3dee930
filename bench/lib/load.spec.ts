// The load module starts the HTTP load generator with the service's start flags, an ES module jest cannot require.
jest.mock('../../scripts/lib/service-process.mjs', () => ({}));

import { windowShare } from './load';

describe('windowShare', () => {
  it('counts a call by the share of it inside the window', () => {
    expect(windowShare(100, 200, 120, 180)).toBe(1);
    expect(windowShare(100, 200, 50, 150)).toBe(0.5);
    expect(windowShare(100, 200, 150, 250)).toBe(0.5);
    expect(windowShare(100, 200, 0, 100)).toBe(0);
    expect(windowShare(100, 200, 120, 120)).toBe(0);
  });
});
