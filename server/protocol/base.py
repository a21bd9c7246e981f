"""The base classes of every wire model: camelCase on the wire, snake_case in Python.

Serialisation rule, the same for every message: a field without a default is always sent (``null``
when it is empty, e.g. ``exitCode``); a field with a default of ``None`` is left out when empty
(declare it with :func:`optional`). Models build their validators on first use
(``defer_build``), so importing the protocol costs little at start-up.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


def _is_none(value: object) -> bool:
    return value is None


def optional(description: str, **kwargs: Any) -> Any:
    """A field that is absent from the wire (not ``null``) when it is ``None``."""
    return Field(default=None, exclude_if=_is_none, description=description, **kwargs)


class WireModel(BaseModel):
    """A message (or part of one) the server sends, or a client's answer it reads."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True
    )

    def wire(self) -> dict[str, Any]:
        """The JSON object sent on the wire."""
        return self.model_dump(by_alias=True, mode="json")


class StrictParams(WireModel):
    """Request params from a client: unknown fields are errors (a typo in a safety flag must
    never pass silently)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        defer_build=True,
        extra="forbid",
    )


class ClientAnswer(WireModel):
    """A client's result to a server request: unknown fields are ignored (clients may add their
    own), missing or mistyped known fields make it malformed."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        defer_build=True,
        extra="ignore",
    )
