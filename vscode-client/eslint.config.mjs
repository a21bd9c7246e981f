// ESLint flat config: typescript-eslint's type-checked rules for src/, webview/ and the tests,
// the recommended rules for the build scripts.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // src/protocol.generated.ts is generated from the published schema (checked by check:protocol).
  { ignores: ['dist/', 'dist-test/', 'node_modules/', 'test/e2e/', 'test/contract/', 'src/*.generated.ts'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      eqeqeq: 'error',
    },
  },
  {
    files: ['test/unit/**/*.ts', 'test/integration/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  { files: ['*.mjs', 'scripts/*.mjs', 'bench/*.mjs'], languageOptions: { globals: { ...globals.node } } },
);
