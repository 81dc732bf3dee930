import * as realtime from '@canopy/realtime';
import * as testing from '@canopy/realtime/testing';

// The production barrel carries no test code: the contract suites are reached through `@canopy/realtime/testing`.
describe('@canopy/realtime entries', () => {
  it('keeps the contract suites out of the production barrel', () => {
    for (const name of Object.keys(testing)) expect(Object.keys(realtime)).not.toContain(name);
    expect(Object.keys(testing)).toEqual(
      expect.arrayContaining([
        'describeEventBusContract',
        'describeLiveRegistryContract',
        'describeActivityFeedContract',
        'describeCredentialNoticesContract',
      ]),
    );
  });
});
