"""Tool-call markup of each model family: where it is in streamed text (:mod:`.markers`,
:mod:`.scan`) and how to read it (:mod:`.json_calls`, :mod:`.text_calls`).
:mod:`engine.toolcalls` drives these over a stream."""

from engine.toolcall_formats.base import ERROR_PREFIX, Found, failed, is_json
from engine.toolcall_formats.json_calls import bare_calls, split_json_calls
from engine.toolcall_formats.markers import (
    FENCE_BLOCKS,
    TAG_BLOCKS,
    Block,
    FenceAction,
    backtick_run,
    earliest,
    find_fence,
    partial_start,
)
from engine.toolcall_formats.scan import EndFinder, JsonScan

__all__ = [
    "ERROR_PREFIX",
    "FENCE_BLOCKS",
    "TAG_BLOCKS",
    "Block",
    "EndFinder",
    "FenceAction",
    "Found",
    "JsonScan",
    "backtick_run",
    "bare_calls",
    "earliest",
    "failed",
    "find_fence",
    "is_json",
    "partial_start",
    "split_json_calls",
]
