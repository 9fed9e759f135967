"""The BFCL task set of ``fncall-graph bench``: its AST-style scoring on hand-written
cases, and the command over the installed data on a recording (no model quality)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from fncall_graph.bfcl import CATEGORIES, calls_match, load_items, tools_of

CLI = str(Path(sys.executable).parent / "fncall-graph")

AREA = [{"area.triangle": {"base": [10], "height": [5], "unit": ["units", ""]}}]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def test_a_call_with_allowed_values_matches() -> None:
    assert calls_match([call("area.triangle", base=10, height=5)], AREA)
    assert calls_match([call("area.triangle", base=10.0, height=5, unit="Units")], AREA)


@pytest.mark.parametrize(
    "calls",
    [
        [call("area.triangle", base=10, height=6)],  # a value not allowed
        [call("area.triangle", base=10)],  # a required argument left out
        [call("area.triangle", base=10, height=5, colour="red")],  # an unknown argument
        [call("area.square", base=10, height=5)],  # another function
        [call("area.triangle", base="10", height=5)],  # a string for a number
        [call("area.triangle", base=10, height=5)] * 2,  # one call too many
        [],  # no call at all
    ],
)
def test_a_call_off_the_answers_does_not_match(calls: list[dict[str, Any]]) -> None:
    assert not calls_match(calls, AREA)


def test_parallel_calls_match_in_any_order_each_answer_once() -> None:
    truth = [
        {"weather": {"city": ["Boston", "Boston, MA"]}},
        {"weather": {"city": ["Paris"]}},
    ]
    assert calls_match([call("weather", city="paris"), call("weather", city="Boston, MA")], truth)
    assert not calls_match([call("weather", city="Paris"), call("weather", city="Paris")], truth)


def test_lists_and_objects_compare_by_value() -> None:
    truth = [{"f": {"xs": [[3, 5]], "opts": [{"deep": [True]}]}}]
    assert calls_match([call("f", xs=[3, 5], opts={"deep": True})], truth)
    assert not calls_match([call("f", xs=[5, 3], opts={"deep": True})], truth)
    assert not calls_match([call("f", xs=[3, 5], opts={"deep": 1})], truth)


def test_irrelevance_passes_only_without_calls() -> None:
    assert calls_match([], [])
    assert not calls_match([call("anything")], [])


def test_bfcl_types_become_json_schema() -> None:
    item = {
        "function": [
            {
                "name": "geo.distance",
                "description": "d",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "a": {"type": "tuple", "items": {"type": "float"}},
                        "b": {"type": "any"},
                    },
                    "required": ["a"],
                },
            }
        ]
    }
    (tool,) = tools_of(item)
    assert tool["function"]["name"] == "geo_distance"
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "number"}}, "b": {}},
        "required": ["a"],
    }


def _installed() -> bool:
    try:
        metadata.distribution("bfcl-eval")
    except metadata.PackageNotFoundError:
        return False
    return True


def _hermes(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "\n".join(
        "<tool_call>\n"
        + json.dumps({"name": name.replace(".", "_"), "arguments": args}, ensure_ascii=False)
        + "\n</tool_call>"
        for name, args in calls
    )


def _right(ground_truth: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls of a possible answer: the first allowed value of each argument given."""
    calls = []
    for answer in ground_truth:
        ((name, allowed),) = answer.items()
        calls.append((name, {k: v[0] for k, v in allowed.items() if v[0] != ""}))
    return calls


@pytest.mark.skipif(not _installed(), reason="bfcl-eval (the bench extra) is not installed")
def test_bench_scores_a_recording_on_the_installed_data(tmp_path: Path) -> None:
    first = {c: load_items(c, 1)[0] for c in CATEGORIES}
    simple = _right(first["simple"]["ground_truth"])
    wrong = [(name, {}) for name, _ in _right(first["multiple"]["ground_truth"])]
    outputs = [
        _hermes(simple),  # right
        _hermes(wrong),  # its arguments left out: wrong
        _hermes(_right(first["parallel"]["ground_truth"])),  # every call: right
        "I cannot help with that.",  # no call where calls were due: wrong
        "None of these functions fits.",  # irrelevance answered without a call: right
    ]
    recording = tmp_path / "bfcl.json"
    recording.write_text(json.dumps({"dialect": "hermes", "outputs": outputs}), "utf-8")
    done = subprocess.run(
        [
            CLI,
            "bench",
            f"replay:{recording}",
            *("--tasks", "bfcl", "--limit", "1", "--modes", "hermes"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("5 items per mode (the first 1 of each category)")
    header = ["mode", "simple", "multiple", "parallel", "par.-multiple", "irrelevance"]
    assert lines[1].split()[:6] == header
    row = lines[2].split()
    assert row[:8] == ["hermes", "1/1", "0/1", "1/1", "0/1", "1/1", "3/5", "0"]
    assert lines[3] == "use: hermes (3/5 right)"


def test_bench_without_the_data_says_how_to_install_it(tmp_path: Path) -> None:
    if _installed():
        pytest.skip("bfcl-eval is installed")
    done = subprocess.run(
        [CLI, "bench", "replay:database-assistant", "--tasks", "bfcl", "--modes", "hermes"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "pip install --no-deps bfcl-eval" in done.stderr
