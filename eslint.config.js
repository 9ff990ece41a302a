// ESLint flat config. Besides the recommended rules it enforces the dependency direction of
// DESIGN.md section 3: plugins -> core; server -> core; core -> nothing of ours.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const heavyRuntime = ['koa', 'koa-*', '@koa/*', '@mikro-orm/*', 'tsyringe', 'piscina', 'pino'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', '.tmp/**', '**/*.mjs', 'server/web/vendor/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-empty-object-type': 'off',
    },
  },
  {
    files: ['core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@usage-monitor/*', '../../server/*', '../../plugins/*', ...heavyRuntime], message: 'core imports nothing of ours and no server runtime' }] },
      ],
    },
  },
  {
    files: ['plugins/**/*.ts', 'examples/provider-*/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@usage-monitor/*', '!@usage-monitor/core', '!@usage-monitor/core/testing', '**/server/**', '**/core/src/**', ...heavyRuntime],
              message: 'plugins import only @usage-monitor/core (they run in worker threads and in the conformance kit)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@usage-monitor/provider-*', '@usage-monitor/datasource-*', '../../plugins/*', '../../../plugins/*', '../../../../plugins/*'], message: 'the server loads plugins by package name at runtime' }] },
      ],
    },
  },
);
