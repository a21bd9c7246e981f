// Bundles the extension into dist/extension.js (`vscode` stays external) and the chat webview
// into dist/webview.js (a browser script: markdown-it, DOMPurify and highlight.js inside), or with
// `--tests DIR` the tests in test/DIR into dist-test/DIR (`vscode` aliased to an empty stub: the
// glue under test never uses it; jsdom stays external, loaded from node_modules), or with
// `--bench` the webview benchmark into dist-test/bench.
import { readdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests') ? process.argv[process.argv.indexOf('--tests') + 1] ?? 'unit' : undefined;
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning' };
const node = { ...common, platform: 'node', target: 'node20', format: 'cjs' };

if (process.argv.includes('--bench')) {
  await esbuild.build({ ...node, entryPoints: ['bench/webview.bench.mjs'], outdir: 'dist-test/bench', external: ['jsdom'] });
} else if (tests) {
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
    // globalName: the e2e layer measures streaming in the real webview with the view's own classes.
    esbuild.build({ ...common, platform: 'browser', target: 'chrome120', format: 'iife', globalName: 'gatehouseWebview', entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js' }),
  ]);
}
