// Test files that measure their own process's timing (event-loop delay under load): with another test file running
// beside them they would measure that file's CPU too. `npm test` (scripts/test.mjs) runs every other file first,
// two at a time (CANOPY_TEST_PHASE=together leaves these out, jest.config.js), then these, one at a time.

module.exports.ALONE = ['apps/api/test/hostile-tenant-imports.e2e-spec.ts'];
