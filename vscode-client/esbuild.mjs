// Bundles the extension into dist/extension.js (`vscode` stays external), or with `--tests DIR` the
// tests in test/DIR into dist-test/DIR (`vscode` aliased to an empty stub: the glue under test never uses it).
import { readdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests') ? process.argv[process.argv.indexOf('--tests') + 1] ?? 'unit' : undefined;
const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: !production, minify: production, logLevel: 'warning' };

await esbuild.build(tests
  ? { ...common, entryPoints: readdirSync(`test/${tests}`).filter((f) => f.endsWith('.test.ts')).map((f) => `test/${tests}/${f}`), outdir: `dist-test/${tests}`, alias: { vscode: './test/unit/vscode-stub.ts' } }
  : { ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] });
