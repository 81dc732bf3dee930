// Three depths of tests: unit tests beside the code (*.spec.ts, pure logic, no I/O), integration
// tests against the machine's real Postgres and Redis (*.int-spec.ts, each file in its own database), and
// end-to-end tests that boot the app and speak HTTP/SSE/WebSocket (*.e2e-spec.ts).

/** @type {import('@swc/jest').Options} */
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};

/** @type {import('jest').Config} */
const base = {
  rootDir: __dirname,
  roots: ['<rootDir>/apps', '<rootDir>/libs'],
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)s$': ['@swc/jest', swc] },
  // Prisma's WASM schema engine, jose (user tokens) and file-type (sniffing uploads) with its dependencies ship as ES
  // modules only; jest runs CommonJS, so they are transformed too.
  transformIgnorePatterns: [
    '/node_modules/(?!(@prisma/schema-engine-wasm|jose|file-type|strtok3|token-types|@tokenizer|uint8array-extras|@borewit)/)',
  ],
  moduleNameMapper: {
    // Its package exports name no `require` condition (an ES module only): jest is pointed at its entry.
    '^file-type$': '<rootDir>/node_modules/file-type/index.js',
    '^@canopy/([^/]+)$': '<rootDir>/libs/$1/src',
    '^@canopy/([^/]+)/(.*)$': '<rootDir>/libs/$1/src/$2',
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testPathIgnorePatterns: ['/node_modules/'],
};

/** @type {import('jest').Config} */
module.exports = {
  // Per-test deadline (a global option: jest ignores it inside projects). Booting an app with its own database
  // takes seconds; a hung test still fails instead of stalling the run.
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/scripts/lib/slowest-files-reporter.cjs'],
  // Two test files at a time even on two cores (jest's default there is one): most of a file's time is spent
  // waiting for processes, databases and sockets, not computing (a serial run kept the cores ~37% busy; two at a
  // time took the fresh-clone run from 1,036 s of jest to 500).
  maxWorkers: 2,
  projects: [
    // The benches' pure helpers (bench/) have unit tests too.
    { ...base, displayName: 'unit', roots: [...base.roots, '<rootDir>/bench'], testMatch: ['**/*.spec.ts'] },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['**/*.int-spec.ts'],
      globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
    },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
    },
  ],
};
