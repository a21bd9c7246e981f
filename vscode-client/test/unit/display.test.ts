import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { HIDDEN_RANGES, hiddenCharacters, hiddenWarning, visible } from '../../src/display';

interface Vectors {
  ranges: [number, number][];
  cases: { input: string; visible: string; hidden: string[] }[];
}

// dist-test/unit -> the repository root: the file every client's display rule is tested against.
const vectors = JSON.parse(
  readFileSync(resolve(__dirname, '..', '..', '..', 'docs', 'schema', 'display-safety.json'), 'utf8'),
) as Vectors;

test('the hidden ranges are exactly the server’s', () => {
  assert.deepEqual(HIDDEN_RANGES, vectors.ranges);
});

for (const c of vectors.cases) {
  test(`display rule: ${JSON.stringify(c.input).slice(0, 60)}`, () => {
    assert.equal(visible(c.input), c.visible);
    assert.deepEqual(hiddenCharacters(c.input), c.hidden);
  });
}

test('a command that hides characters comes with a warning; a plain one does not', () => {
  assert.match(hiddenWarning('touch x #\u001b[2K  $ ls') ?? '', /hidden or control characters \(\\x1b\)/);
  assert.equal(hiddenWarning('ls -la'), undefined);
});
