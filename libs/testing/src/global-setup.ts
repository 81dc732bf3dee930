// Jest global setup of the integration and e2e projects: the test role and the migrated template database.

import { prepareTemplate } from './test-postgres';

export default async function globalSetup(): Promise<void> {
  await prepareTemplate();
}
