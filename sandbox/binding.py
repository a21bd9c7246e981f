"""Content binding: an approval is for one exact call, and nothing else runs on it.

Every decision to run a call (a person's answer, a rule, the settings) records the SHA-256 of
``(tool, canonical arguments, working folder)`` (:func:`content_digest`). The executor recomputes
it from what it is about to start, right before the process starts (:meth:`Binding.check`, called
by :func:`sandbox.runner.execute`), and refuses a mismatch: arguments changed between the prompt
and the run, a different working folder, a call that was never decided.

Canonical arguments are JSON with sorted keys, no insignificant whitespace, and the characters as
they are (``ensure_ascii=False``); NaN and infinities are refused. The digest is lowercase hex.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class BindingMismatch(Exception):
    """What is about to run is not what was decided."""


def canonical_json(value: Any) -> str:
    """The one serialisation every digest is computed over."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


def content_digest(tool: str, arguments: Mapping[str, Any], cwd: str | Path) -> str:
    """SHA-256 (hex) of ``(tool, canonical arguments, working folder)``."""
    payload = canonical_json([tool, dict(arguments), str(cwd)])
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Binding:
    """What a decision approved (its digest), and what the executor is about to run."""

    tool: str
    arguments: Mapping[str, Any]
    """The arguments the process is built from, exactly (not the ones that were shown)."""
    digest: str
    """The digest recorded when the call was decided."""

    def check(self, cwd: str | Path) -> None:
        """Raise :class:`BindingMismatch` unless what runs in ``cwd`` is what was decided."""
        actual = content_digest(self.tool, self.arguments, cwd)
        if not hmac.compare_digest(actual, self.digest):
            raise BindingMismatch(
                f"Not run: what was about to run ({self.tool} in {cwd}) is not what was approved "
                "(its SHA-256 differs from the approval's)."
            )
