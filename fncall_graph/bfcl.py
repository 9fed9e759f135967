"""Measure a model on public function-calling data (BFCL), per dialect: which dialect to use.

The Berkeley Function Calling Leaderboard's single-turn categories, read at run time from
the installed ``bfcl-eval`` package (``pip install -e '.[bench]'``, or just its data with
``pip install --no-deps bfcl-eval``):

- simple: one function, one call;
- multiple: several functions, one call of the right one;
- parallel: one function, several calls in one reply;
- parallel_multiple: several functions, several calls;
- irrelevance: no function fits: the right reply calls none.

Each item is one model call (the question, its functions bound through the mode's
dialect) and is scored as BFCL's AST check does: the calls of the reply must be the
expected ones, in any order, each naming the expected function with every argument among
the values the data allows (an optional argument may be left out). Function names are
sent with ``.`` as ``_`` (as BFCL does for OpenAI-style names) and read back. A
``+first_call`` mode demands a call (``tool_choice="any"``), so it passes no irrelevance
item by construction; ``+always`` holds replies to the grammar and lets the model choose.

Example:
    .. code-block:: bash

        fncall-graph bench ollama:qwen3 --tasks bfcl --limit 10
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from fncall_graph.adapters import with_dialect
from fncall_graph.adapters.models import resolve_model

__all__ = ["BFCLDataError", "measure"]

CATEGORIES: tuple[str, ...] = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
"""The categories measured, in the order they run."""

# category -> the name of its data file in bfcl-eval (simple is the Python set)
_FILES = {"simple": "simple_python"}


class BFCLDataError(RuntimeError):
    """The BFCL data is not installed, or not in the shape this bench reads."""


def _data_dir() -> Path:
    try:
        dist = metadata.distribution("bfcl-eval")
    except metadata.PackageNotFoundError:
        raise BFCLDataError(
            "the BFCL data is not installed: pip install -e '.[bench]' in the clone, or "
            "only the data: pip install --no-deps bfcl-eval"
        ) from None
    # located, not imported: the data needs none of the package's own dependencies
    return Path(str(dist.locate_file("bfcl_eval/data")))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    except (OSError, json.JSONDecodeError) as exc:
        raise BFCLDataError(f"{path}: {exc}") from exc


def _data_file(folder: Path, category: str) -> Path:
    stem = _FILES.get(category, category)
    # BFCL_v4_multiple.json, not BFCL_v4_live_multiple.json nor _parallel_multiple
    pattern = re.compile(rf"BFCL_v(\d+)_{stem}\.json")
    found = sorted(
        (p for p in folder.glob("BFCL_v*.json") if pattern.fullmatch(p.name)),
        key=lambda p: int(pattern.fullmatch(p.name)[1]),  # type: ignore[index]
    )
    if not found:
        raise BFCLDataError(f"no BFCL_v*_{stem}.json in {folder} (bfcl-eval's data changed?)")
    return found[-1]


def load_items(category: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` items of ``category`` (all when ``None``): each has ``id``,
    ``question`` (its messages), ``function`` (BFCL's function specs) and
    ``ground_truth`` (the possible answers; empty for irrelevance)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    folder = _data_dir()
    path = _data_file(folder, category)
    items = _read_jsonl(path)[:limit]
    answers: dict[str, Any] = {}
    if category != "irrelevance":
        answer_path = folder / "possible_answer" / path.name
        answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(answer_path)}
    for item in items:
        item["ground_truth"] = answers.get(item["id"], [])
        if category != "irrelevance" and not item["ground_truth"]:
            raise BFCLDataError(f"{answer_path}: no possible answer for {item['id']}")
    return items


# --------------------------------------------------------------------------- tools

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _schema(spec: Any) -> Any:
    """BFCL's parameter schema as JSON Schema (``dict``, ``float``, ``tuple``, ``any``)."""
    if isinstance(spec, list):
        return [_schema(s) for s in spec]
    if not isinstance(spec, Mapping):
        return spec
    out = {}
    for key, value in spec.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = _TYPES.get(value, value)
        elif key in ("properties",) and isinstance(value, Mapping):
            out[key] = {name: _schema(v) for name, v in value.items()}
        else:
            out[key] = _schema(value)
    return out


def _wire_name(name: str) -> str:
    return name.replace(".", "_")


def tools_of(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The item's functions as OpenAI tool dicts, ``.`` in names written ``_``."""
    return [
        {
            "type": "function",
            "function": {
                "name": _wire_name(f["name"]),
                "description": f.get("description", ""),
                "parameters": _schema(f.get("parameters") or {"type": "object"}),
            },
        }
        for f in item["function"]
    ]


# --------------------------------------------------------------------------- scoring


def _text(value: str) -> str:
    # BFCL's string standardisation: case, spaces and light punctuation do not count
    return re.sub(r"[ ,./\-_*^]", "", value).lower().replace("'", '"')


def _same(value: Any, expected: Any) -> bool:
    """Whether a model's argument value equals one allowed value."""
    if isinstance(expected, bool) or isinstance(value, bool):
        return value is expected
    if isinstance(expected, int | float) and isinstance(value, int | float):
        return float(value) == float(expected)
    if isinstance(expected, str) and isinstance(value, str):
        return _text(value) == _text(expected)
    if isinstance(expected, list) and isinstance(value, list | tuple):
        return len(value) == len(expected) and all(map(_same, value, expected))
    if isinstance(expected, Mapping) and isinstance(value, Mapping):
        return _args_match(value, expected)
    return False


def _args_match(args: Mapping[str, Any], allowed: Mapping[str, Any]) -> bool:
    """Every argument known and among its allowed values; every missing one optional."""
    if set(args) - set(allowed):
        return False
    for name, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if name not in args:
            if "" not in options:
                return False
        elif not any(_same(args[name], o) for o in options if o != ""):
            return False
    return True


def _call_matches(call: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    ((name, allowed),) = answer.items()
    return call.get("name") == name and _args_match(call.get("args") or {}, allowed)


def calls_match(calls: Sequence[Mapping[str, Any]], ground_truth: Sequence[Any]) -> bool:
    """BFCL's AST check of one reply.

    Args:
        calls: the reply's calls, ``{"name": ..., "args": {...}}`` with the functions'
            own names.
        ground_truth: the possible answers, ``[{name: {arg: [allowed values]}}, ...]``
            (``""`` among the values: the argument may be left out); empty for an
            irrelevance item, which only a reply without calls passes.

    Returns:
        Whether the calls are exactly the expected ones, in any order.

    Example:
        >>> truth = [{"area": {"base": [10], "unit": ["units", ""]}}]
        >>> calls_match([{"name": "area", "args": {"base": 10.0}}], truth)
        True
        >>> calls_match([{"name": "area", "args": {"base": 5}}], truth)
        False
        >>> calls_match([], [])
        True
    """
    if len(calls) != len(ground_truth):
        return False

    def assign(rest: list[Mapping[str, Any]], answers: list[Any]) -> bool:
        if not rest:
            return True
        first = rest[0]
        return any(
            _call_matches(first, a) and assign(rest[1:], answers[:i] + answers[i + 1 :])
            for i, a in enumerate(answers)
        )

    return assign(list(calls), list(ground_truth))


# --------------------------------------------------------------------------- runs


def _bound(model: Any, dialect: str, constraint: str, tools: list[dict[str, Any]]) -> Any:
    wrapped = with_dialect(model, dialect)
    if constraint == "first_call":  # one reply per item: the first call is the only one
        return wrapped.bind_tools(tools, tool_choice="any")
    if constraint == "always":
        return wrapped.bind_tools(tools, strict=True)
    return wrapped.bind_tools(tools)


def _reply_calls(reply: AIMessage, names: Mapping[str, str]) -> list[dict[str, Any]]:
    calls = [{"name": names.get(c["name"], c["name"]), "args": c["args"]} for c in reply.tool_calls]
    # a call the dialect could not read is still a call: it fails the item
    calls += [{"name": None, "args": {}} for _ in reply.invalid_tool_calls]
    return calls


def run_mode(
    spec: str, mode: str, items: Mapping[str, Sequence[Mapping[str, Any]]], *, model: Any = None
) -> dict[str, Any]:
    """Score ``mode`` (``"hermes"``, ``"qwen+first_call"``, …) for ``spec`` on ``items``
    (category → items); ``model`` replaces the one ``spec`` names (tests)."""
    dialect, _, constraint = mode.partition("+")
    if model is None:
        model = resolve_model(
            spec, **({"temperature": 0, "max_tokens": 384} if spec == "local" else {})
        )
    score: dict[str, Any] = {"mode": mode, "right": {}, "total": {}, "errors": 0}
    started = time.perf_counter()
    for category, chosen in items.items():
        score["right"][category] = 0
        score["total"][category] = len(chosen)
        for item in chosen:
            names = {_wire_name(f["name"]): f["name"] for f in item["function"]}
            messages = [(m["role"], m["content"]) for m in item["question"][0]]
            try:
                reply = _bound(model, dialect, constraint, tools_of(item)).invoke(messages)
            except Exception:  # a reply that breaks the mode is a miss, counted apart
                score["errors"] += 1
                continue
            score["right"][category] += calls_match(
                _reply_calls(reply, names), item["ground_truth"]
            )
    score["seconds"] = time.perf_counter() - started
    return score


def _short(category: str) -> str:
    return {"parallel_multiple": "par.-multiple"}.get(category, category)


def table_lines(scores: Sequence[dict[str, Any]], categories: Sequence[str]) -> list[str]:
    """The scores as a text table, one line per mode under a header."""
    lines = [
        f"{'mode':<20} "
        + " ".join(f"{_short(c):>13}" for c in categories)
        + f" {'all':>9} {'errors':>7} {'s':>7}"
    ]
    for s in scores:
        cells = [f"{s['right'][c]}/{s['total'][c]}" for c in categories]
        right, total = sum(s["right"].values()), sum(s["total"].values())
        lines.append(
            f"{s['mode']:<20} "
            + " ".join(f"{cell:>13}" for cell in cells)
            + f" {f'{right}/{total}':>9} {s['errors']:>7} {s['seconds']:>7.1f}"
        )
    return lines


def measure(
    spec: str,
    modes: Sequence[str],
    *,
    limit: int | None = 20,
    show: Callable[[str], None] = print,
    model: Any = None,
) -> list[dict[str, Any]]:
    """Run every mode for ``spec`` on the BFCL categories, showing the table as it fills
    and the mode to use.

    Args:
        spec: a model spec.
        modes: the modes to run (``DIALECT`` or ``DIALECT+first_call|always``).
        limit: items per category (the first ones of each file); ``None``: all.
        show: where each line goes.
        model: a model to use in place of the one ``spec`` names (tests).

    Returns:
        One score per mode: ``mode``, ``right`` and ``total`` per category, ``errors``
        (replies that raised), ``seconds``.

    Raises:
        BFCLDataError: the data is not installed.
    """
    items = {category: load_items(category, limit) for category in CATEGORIES}
    count = sum(len(v) for v in items.values())
    show(
        f"model {spec} · BFCL {', '.join(CATEGORIES)}: {count} items per mode "
        f"({'all' if limit is None else f'the first {limit}'} of each category)"
    )
    show(table_lines([], CATEGORIES)[0])
    scores: list[dict[str, Any]] = []
    for mode in modes:
        scores.append(run_mode(spec, mode, items, model=model))
        show(table_lines(scores, CATEGORIES)[-1])
    if scores:
        best = max(scores, key=lambda s: (sum(s["right"].values()), -s["seconds"]))
        right = sum(best["right"].values())
        show(f"use: {best['mode']} ({right}/{count} right)")
    return scores
