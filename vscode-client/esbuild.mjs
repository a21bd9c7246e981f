// Bundles the extension into dist/extension.js (`vscode` stays external) and the chat webview
// into dist/webview.js (a browser script: markdown-it, DOMPurify and highlight.js inside), or with
// `--tests DIR` the tests in test/DIR into dist-test/DIR (`vscode` aliased to an empty stub: the
// glue under test never uses it; jsdom stays external, loaded from node_modules).
import { readdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests') ? process.argv[process.argv.indexOf('--tests') + 1] ?? 'unit' : undefined;
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning' };
const node = { ...common, platform: 'node', target: 'node20', format: 'cjs' };

if (tests) {
  await esbuild.build({
    ...node,
    entryPoints: readdirSync(`test/${tests}`).filter((f) => f.endsWith('.test.ts') || f.endsWith('.bench.ts')).map((f) => `test/${tests}/${f}`),
    outdir: `dist-test/${tests}`,
    alias: { vscode: './test/unit/vscode-stub.ts' },
    external: ['jsdom'],
  });
} else {
  await Promise.all([
    esbuild.build({ ...node, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] }),
    // The webview's CSP allows no eval and no inline code: esbuild emits neither.
    esbuild.build({ ...common, platform: 'browser', target: 'chrome120', format: 'iife', entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js' }),
  ]);
}
