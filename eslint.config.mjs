// Lint rules that guard Canopy's architecture as well as its code: the core stays pure and isomorphic, imports
// point down the layers only (apps -> manager -> session -> agent/store/realtime/queue -> core), and only entry
// points and test tooling read process.env (everything else gets the validated config).

import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

const noApps = {
  group: ['**/apps/**', 'apps/**'],
  message: 'libraries never import an app: apps compose libraries, not the other way round.',
};

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
  {
    // Layers import downwards only: no library reaches into an app (end-to-end tests boot one, that is all).
    files: ['libs/*/src/**/*.ts'],
    ignores: [
      '**/*.e2e-spec.ts',
      'libs/core/src/**',
      'libs/session/src/**',
      'libs/{store,agent,realtime,queue}/src/**',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [noApps] }] },
  },
  {
    // The session layer declares the ports it needs from the manager (LiveSessionHost); it never imports it.
    // Its integration tests compose the whole engine through the manager's harness, as a deployable does.
    files: ['libs/session/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noApps,
            {
              group: ['@canopy/manager', '@canopy/manager/*'],
              message:
                'libs/session is below the manager: declare a port here and let the manager implement it.',
            },
          ],
        },
      ],
    },
  },
  {
    // Infrastructure is under the session engine and the manager.
    files: ['libs/{store,agent,realtime,queue}/src/**/*.ts'],
    ignores: ['**/*.e2e-spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noApps,
            {
              group: ['@canopy/session', '@canopy/session/*', '@canopy/manager', '@canopy/manager/*'],
              message: 'infrastructure libraries are below the session and manager layers.',
            },
          ],
        },
      ],
    },
  },
  {
    files: [
      'apps/*/src/main.ts',
      'apps/*/test/support/**',
      'libs/testing/**',
      'scripts/**',
      'prisma.config.ts',
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
