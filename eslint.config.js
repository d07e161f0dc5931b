// ESLint's and typescript-eslint's recommended sets, and the package boundaries. The boundaries are checked twice on
// purpose: here, in the editor, the rule below refuses a relative path into another package's sources;
// dependency-cruiser (.dependency-cruiser.cjs, run by `npm run lint` too) resolves every import against
// the packages' `exports` and holds the rules on which folder may use which.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/.data/**', '**/*.js', '**/*.cjs', '!eslint.config.js', '**/generated/**', 'console/dist/**', 'clients/typescript/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore names what a signature or a destructuring must take but does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // A variable a closure reads before its one assignment (a timer, a callback) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+((services/)?(accounts|orders|strategies|fills|events)|gateway|shared)/(src|migrations)/',
              message: "Import another package by its name and a path its package.json `exports` declares (e.g. '@ots/accounts').",
            },
          ],
        },
      ],
    },
  },
  // The console's components: the rules of hooks and the React Compiler's checks, as React recommends them.
  { files: ['console/**/*.ts', 'console/**/*.tsx'], ...reactHooks.configs.flat.recommended },
);
