"""DeepSeek V3/R1 and V3.1: a group of calls between "tool calls begin" and "tool calls end"
tokens, each call between "tool call begin" and "tool call end"."""

from __future__ import annotations

import re

from engine.toolcalls.base import Found, failed, json_arguments

_FENCED_ARGS_RE = re.compile(r"```[A-Za-z_]*\s*(.*?)\s*(?:```)?", re.DOTALL)


# DeepSeek's special tokens are spelled with FULLWIDTH VERTICAL LINE (U+FF5C) for the bars and
# LOWER ONE EIGHTH BLOCK (U+2581) for the spaces: <|tool calls begin|> and so on.
def _deepseek_token(words: str) -> str:
    return "<\uff5c" + words.replace(" ", "\u2581") + "\uff5c>"


CALLS_BEGIN = _deepseek_token("tool calls begin")
CALLS_END = _deepseek_token("tool calls end")
CALL_BEGIN = _deepseek_token("tool call begin")
CALL_END = _deepseek_token("tool call end")
SEP = _deepseek_token("tool sep")


def parse_deepseek(inner: str) -> list[Found]:
    """The text between DeepSeek's "tool call begin" and "tool call end" tokens.

    V3/R1: ``function`` SEP ``NAME`` newline, then the arguments in a ```` ```json ```` fence;
    V3.1: ``NAME`` SEP ``{arguments}`` (SEP is the "tool sep" token).
    """
    left, sep, right = inner.partition(SEP)
    if not sep:
        return [failed(f"expected <tool name>{SEP}{{arguments}}")]
    name, args = left.strip(), right
    if name == "function" and not right.lstrip().startswith("{"):
        line, _, args = right.partition("\n")
        name = line.strip()
        fenced = _FENCED_ARGS_RE.fullmatch(args.strip())
        if fenced is not None:
            args = fenced.group(1)
    if not name:
        return [failed(f"missing the tool name before {SEP}")]
    return [json_arguments(name, args)]
