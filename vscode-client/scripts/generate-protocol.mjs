// The TypeScript types of the wire protocol, generated from the published JSON Schema
// (docs/schema/gatehouse.schema.json, itself generated from the server's pydantic models).
//   node scripts/generate-protocol.mjs          writes src/protocol.generated.ts
//   node scripts/generate-protocol.mjs --check  exits 1 when that file is stale (run by the tests)
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const schemaFile = join(here, '..', '..', 'docs', 'schema', 'gatehouse.schema.json');
const outFile = join(here, '..', 'src', 'protocol.generated.ts');

const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));
// Only the definitions become types; the method table stays in protocol.ts.
const root = { $defs: schema.$defs, title: 'GatehouseProtocol', type: 'object', additionalProperties: false };
const body = await compile(root, 'GatehouseProtocol', {
  bannerComment:
    '/* Generated from docs/schema/gatehouse.schema.json by scripts/generate-protocol.mjs: do not edit.\n' +
    ' * Change the models in server/protocol/, run `python -m server.protocol.schema`, then\n' +
    ' * `npm run generate:protocol`. */',
  unreachableDefinitions: true,
  additionalProperties: false,
  style: { singleQuote: true, printWidth: 120 },
});

if (process.argv.includes('--check')) {
  const current = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
  if (current !== body) {
    console.error('src/protocol.generated.ts is stale: run `npm run generate:protocol`');
    process.exit(1);
  }
} else {
  writeFileSync(outFile, body);
}
