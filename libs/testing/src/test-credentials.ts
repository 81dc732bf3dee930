// The secrets every test deployment (an in-process test app or a Cluster of real processes) is started with.

/** The admin key every test deployment accepts. */
export const TEST_ADMIN_KEY = 'test-admin-key-0123456789abcdef';

/** Signs the end-user tokens of test deployments. */
export const TEST_JWT_SECRET = 'test-jwt-secret-0123456789-abcdefghijklmnopqrstuvwxyz';
