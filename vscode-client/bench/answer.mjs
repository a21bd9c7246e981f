// A long model answer for the markdown streaming benchmark: `tokens` BPE-like pieces (a word or
// a punctuation mark with its leading space, as the scripted backend streams), with `codeBlocks`
// python code blocks between paragraphs, a list and inline code. Deterministic.
const WORDS = ['the', 'file', 'reads', 'each', 'line', 'and', 'counts', 'words', 'so', 'we', 'can', 'see', 'how', 'many', 'there', 'are'];

/** @returns {string[]} the answer's deltas, in order */
export function answerDeltas(tokens = 2000, codeBlocks = 10) {
  const deltas = [];
  let word = 0;
  const say = (n) => {
    for (let i = 0; i < n; i++) deltas.push(`${i === 0 ? '' : ' '}${WORDS[word++ % WORDS.length]}`);
  };
  const perSection = Math.floor(tokens / codeBlocks);
  for (let block = 0; block < codeBlocks; block++) {
    const start = deltas.length;
    deltas.push(`${block === 0 ? '' : '\n\n'}## Step`, ` ${block + 1}`, '\n\n');
    say(30);
    deltas.push(' with', ' `', 'count', '_lines', '`', '.\n\n', '-', ' first');
    say(8);
    deltas.push('\n-', ' second');
    say(8);
    deltas.push('\n\n```', 'python', '\n');
    for (let line = 0; deltas.length - start < perSection - 12; line++) {
      deltas.push('def', ' f', `${line}`, '(', 'path', '):', '\n   ', ' return', ' len', '(open', '(path', ').read', '().', 'split', '())', '\n');
    }
    deltas.push('```', '\n\n');
    say(Math.max(0, perSection - (deltas.length - start)));
  }
  while (deltas.length < tokens) deltas.push(' done');
  return deltas.slice(0, tokens);
}
