import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyDiff, diffCounts, diffRows } from '../../src/diffs';

// Diffs exactly as the server makes them (engine/tools/diffs.py).
const MODIFY = '--- a/f\n+++ b/f\n@@ -2,3 +2,4 @@\n b\n-c\n+C\n+c2\n d\n';
const CREATE = '--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n';
const NO_EOL = '--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n';
const ADD_EOL = '--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n';
const TWO_HUNKS = '--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -9,2 +9,2 @@\n 9\n-10\n+ten\n';

test('the proposal is the diff applied to the file as it is', () => {
  assert.equal(applyDiff('a\nb\nc\nd\ne\n', MODIFY), 'a\nb\nC\nc2\nd\ne\n');
  assert.equal(applyDiff('', CREATE), 'x\ny\n');
  assert.equal(applyDiff('a\nb', NO_EOL), 'a\nc');
  assert.equal(applyDiff('a', ADD_EOL), 'a\n');
  const ten = Array.from({ length: 10 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal(applyDiff(ten, TWO_HUNKS), ten.replace('1\n', 'one\n').replace('10\n', 'ten\n'));
});

test('a diff that does not fit the file is refused, never applied loosely', () => {
  assert.throws(() => applyDiff('a\nB\nc\nd\n', MODIFY), /does not fit/);
  assert.throws(() => applyDiff('a\n', MODIFY), /does not fit/);
});

test('rows are numbered on both sides', () => {
  const rows = diffRows(MODIFY);
  assert.deepEqual(rows.map((r) => [r.kind, r.oldLine, r.newLine]), [
    ['header', undefined, undefined],
    ['header', undefined, undefined],
    ['hunk', undefined, undefined],
    ['context', 2, 2],
    ['del', 3, undefined],
    ['add', undefined, 3],
    ['add', undefined, 4],
    ['context', 4, 5],
  ]);
  assert.deepEqual(diffCounts(MODIFY), { added: 2, removed: 1 });
  assert.deepEqual(diffRows(CREATE).filter((r) => r.kind === 'add').map((r) => r.newLine), [1, 2]);
  assert.equal(diffRows(NO_EOL).filter((r) => r.kind === 'note').length, 2);
});
