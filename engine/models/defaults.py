"""The settings a model gets unless told otherwise, read from its metadata.

Small models (at most :data:`SMALL_MODEL_PARAMETERS` parameters, as counted from the file's
tensors, or named like one when the count is unknown) cannot be trusted to write a tool call
unaided, to choose among many tools, or to keep track of several rounds of results. They get:

* ``toolGrammar`` on: the first model turn of a request is constrained to one valid call;
* a reduced tool offer (:data:`SMALL_MODEL_TOOLS`): the terminal alone. Offered several tools, the
  embedded 135M model picks one by the order of the prompt's examples, not by the question:
  offered terminal, list_files and read_file it read ``README.md`` for "How many lines are in each
  Python file here? Use the terminal." in 4 of 6 samples; offered the terminal alone it ran
  ``wc -l *.py`` every time (each command still waits for approval);
* one round of tool calls per request, after which the model answers from the results without
  tools (see :mod:`engine.prompting`: the answer turn shows no tool markup);
* ``min_p`` 0.2 when sampling (llama.cpp's default is 0.05): tokens under a fifth of the likeliest
  one's probability are never drawn. It changes nothing at temperature 0; at 0.7 the embedded
  model's answer from the demo's ``wc -l`` output stated the right counts in 32 of 40 seeds
  instead of 22 (``min_p`` 0.1: 27).

Explicit settings win: ``toolGrammar`` (option or ``--tool-grammar``/``--no-tool-grammar``),
``enabledTools`` (per request, or ``--tools``); ``modelDefaults: false`` turns the table off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.models.entry import ModelEntry
from engine.models.metadata import describe

SMALL_MODEL_PARAMETERS = 1_000_000_000
SMALL_MODEL_TOOLS: tuple[str, ...] = ("terminal",)
_SIZE_IN_NAME = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([mb])(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True)
class ModelDefaults:
    tool_grammar: bool = False
    tools: tuple[str, ...] | None = None
    """The tools offered when a request names none (None: every built-in tool)."""
    tool_rounds: int | None = None
    """Model turns per request that may call tools (None: no limit)."""
    min_p: float | None = None
    """Sampling: drop tokens below this share of the likeliest one's probability (None: the
    engine's default)."""
    reason: str = ""

    @property
    def small(self) -> bool:
        return self.tool_grammar


NO_DEFAULTS = ModelDefaults()
SMALL = ModelDefaults(True, SMALL_MODEL_TOOLS, 1, 0.2)


def parameters_from_name(name: str) -> int | None:
    """``135M`` in ``smollm2-135m-instruct`` or ``0.5B`` in ``qwen2.5:0.5b``; the last such size."""
    sizes = [
        float(m.group(1)) * (1e6 if m.group(2).lower() == "m" else 1e9)
        for m in _SIZE_IN_NAME.finditer(name)
    ]
    return int(sizes[-1]) if sizes else None


def defaults_for_parameters(parameters: int | None, label: str) -> ModelDefaults:
    if parameters is None or parameters > SMALL_MODEL_PARAMETERS:
        return NO_DEFAULTS
    return ModelDefaults(
        SMALL.tool_grammar,
        SMALL.tools,
        SMALL.tool_rounds,
        SMALL.min_p,
        f"{label} has {parameters / 1e6:.0f}M parameters: tool grammar on, "
        f"{' and '.join(SMALL_MODEL_TOOLS)} only, one round of tool calls per request",
    )


def defaults_for(entry: ModelEntry) -> ModelDefaults:
    """The defaults for a model on disk (its files' parameter count, else its name)."""
    info = describe(entry)
    parameters = info.parameters
    if parameters is None:
        parameters = parameters_from_name(f"{entry.name} {entry.path.name}")
    return defaults_for_parameters(parameters, entry.name)
