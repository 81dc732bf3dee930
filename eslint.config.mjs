// Lint rules that guard Canopy's architecture as well as its code: the core stays pure and isomorphic, imports
// point down the layers only (LAYERS: apps -> manager -> session -> agent/auth/queue -> tenancy -> store/realtime ->
// redis -> common/client -> core), and only entry points and test tooling read process.env (everything else gets the
// validated config). libs/testing/src/architecture-lint.spec.ts checks that a forbidden import fails.

import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/**
 * The libraries by layer, lowest first. Code of a library (its tests and its `testing/` helpers aside: they may
 * compose whatever they exercise) imports only libraries of lower layers; docs/architecture.md states this order.
 * libs/core has a stricter rule of its own (it imports nothing), libs/testing is test tooling (no layer).
 */
export const LAYERS = [
  ['core'],
  ['common', 'client'],
  ['redis'],
  ['store', 'realtime'],
  ['tenancy'],
  ['agent', 'auth', 'queue'],
  ['session'],
  ['manager'],
];

const noApps = {
  group: ['**/apps/**', 'apps/**'],
  message: 'libraries never import an app: apps compose libraries, not the other way round.',
};

/** The no-restricted-imports block of each library of LAYERS above core: what it may not import, and why. */
function layerRules() {
  const all = LAYERS.flat();
  const testing = {
    files: ['libs/testing/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noApps] }] },
  };
  const libraries = LAYERS.slice(1).flatMap((layer, i) =>
    layer.map((lib) => {
      const below = LAYERS.slice(0, i + 1).flat();
      const forbidden = all.filter((other) => other !== lib && !below.includes(other)).concat('testing');
      return {
        files: [`libs/${lib}/src/**/*.ts`],
        ignores: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', `libs/${lib}/src/testing/**`],
        rules: {
          'no-restricted-imports': [
            'error',
            {
              patterns: [
                noApps,
                {
                  group: forbidden.flatMap((other) => [`@canopy/${other}`, `@canopy/${other}/*`]),
                  message: `libs/${lib} imports only the layers below it (${below.join(', ')}): see LAYERS.`,
                },
              ],
            },
          ],
        },
      };
    }),
  );
  return [...libraries, testing];
}

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'libs/*/dist/**',
      'coverage/**',
      'node_modules/**',
      '.canopy/**',
      '.scratch/**',
      'libs/store/src/generated/**',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through the injected CanopyConfig.',
        },
      ],
    },
  },
  {
    // The core is shipped to browsers too: no Node, no framework, no I/O.
    files: ['libs/core/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'libs/core is isomorphic: no Node APIs.' },
            {
              group: ['@nestjs/*', '@prisma/*', 'pg', 'ioredis', 'bullmq', '@canopy/*'],
              message: 'libs/core depends on nothing.',
            },
          ],
        },
      ],
    },
  },
  // Every library's imports point down the layers (LAYERS): one block per library, from the table.
  ...layerRules(),
  {
    files: [
      'apps/*/src/main.ts',
      'apps/*/test/support/**',
      'libs/testing/**',
      'scripts/**',
      'prisma.config.ts',
      'jest.config.js',
      'bench/**',
      'examples/**',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'apps/*/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: {
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
        module: 'writable',
        require: 'readonly',
      },
    },
  },
  prettier,
);
