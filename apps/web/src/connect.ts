// The SDK client the pages use: this origin, the signed-in credential.

import { Canopy, type CanopyOptions } from '@canopy/client';

export function connect(credential: string, options: Partial<CanopyOptions> = {}): Canopy {
  return new Canopy({
    baseUrl: location.origin,
    credential,
    // The SDK calls its fetch as a method of its own object; a browser's fetch must be called on the window
    // ("Illegal invocation" otherwise).
    fetch: (input, init) => window.fetch(input, init),
    ...options,
  });
}
