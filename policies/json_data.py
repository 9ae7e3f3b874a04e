"""`read_json`: the one way JSON from a file someone else may have written (a game record, a policy's
``policy.json``, a league database's columns) is read.

Python's decoder recurses once per level of nesting, so an array nested a hundred thousand deep raises
RecursionError, which no caller expects of bad data. Here the depth is bounded: deeper than `MAX_DEPTH` is a
ValueError of one line, like any other malformed JSON, whatever the interpreter's recursion limit.
"""
from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
"""Levels of arrays and objects a file's JSON may nest: what this project writes nests a few levels deep."""


class JSONDepthError(ValueError):
    """JSON nested deeper than `MAX_DEPTH` levels; one line."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def read_json(text: str | bytes) -> Any:
    """The value `text` holds. Malformed JSON is json's own ValueError (`json.JSONDecodeError`, or
    UnicodeDecodeError for bytes that are not UTF-8), and nesting deeper than `MAX_DEPTH` is `JSONDepthError`, a
    ValueError too: one line each."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDepthError() from None
    if depth(value) > MAX_DEPTH:
        raise JSONDepthError()
    return value


def depth(value: Any) -> int:
    """Levels of lists and dicts in `value` (0 for a number or a string), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:  # deeper is refused anyway: no need to walk it all
            stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest
