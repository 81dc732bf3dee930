// The SDK client the pages use: this origin, the signed-in credential.

import { Canopy, type CanopyOptions } from '@canopy/client';

export function connect(credential: string, options: Partial<CanopyOptions> = {}): Canopy {
  return new Canopy({
    baseUrl: location.origin,
    credential,
    ...options,
  });
}
