// Lint holds the package boundaries only: the typescript-eslint recommended set is not enabled because
// today's code does not pass it without churn (explicit `any` in tests and migrations). The boundaries
// are checked twice on purpose: here, in the editor, the rule below refuses a relative path into another
// package's sources; dependency-cruiser (.dependency-cruiser.cjs, run by `npm run lint` too) resolves every
// import against the packages' `exports` and holds the rules on which folder may use which.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/.data/**', '**/*.js', '!eslint.config.js'] },
  {
    files: ['**/*.ts'],
    // The plugin is registered (no rule of it enabled) so that its disable comments in the code resolve.
    plugins: { '@typescript-eslint': tseslint.plugin },
    languageOptions: { parser: tseslint.parser },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
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
);
