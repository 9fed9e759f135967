"""A tool call answered with an error (it failed, was refused, was not run, or could not
be read) is answered by one function (``guarantees/error_answers``), so every such answer has
the same shape: the call's name and id, ``status="error"``, an artifact when one is kept."""

from __future__ import annotations

import ast

from langchain_core.messages.tool import invalid_tool_call, tool_call
from product_code import called, sources

from fncall_graph.guarantees import error_answer

HOME = "guarantees/error_answers.py"


def test_an_error_answer_is_built_in_one_place() -> None:
    builders = sorted(
        f"{path}:{node.lineno}"
        for path, tree in sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and called(node) == "ToolMessage"
        and any(
            k.arg == "status" and getattr(k.value, "value", None) == "error" for k in node.keywords
        )
        and path != HOME
    )
    assert not builders, f"built outside {HOME}: {builders}"


def test_every_kind_of_error_answer_asks_the_one_function() -> None:
    callers: dict[str, int] = {}
    for path, tree in sources().items():
        for node in ast.walk(tree):
            if called(node) == "error_answer":
                callers[path] = callers.get(path, 0) + 1
    # tools: a failure, a timeout, an unreadable call, a call past max_calls_per_reply; a
    # claimed call: an unknown outcome; approve: a rejection; the repeat guard: a read
    # that failed twice, the repeat that ends the turn and the calls it skips; the
    # create_agent approval middleware: a rejection in LangChain's words
    assert callers == {
        "nodes/tools.py": 4,
        "guarantees/claimed_calls.py": 1,
        "nodes/approve.py": 1,
        "guarantees/repeats.py": 3,
        "middleware/bound_approval.py": 1,
    }


def test_an_unreadable_call_without_a_name_or_id_is_still_answered() -> None:
    answer = error_answer(invalid_tool_call(name=None, args="{", id=None, error="bad"), "no")
    assert (answer.name, answer.tool_call_id, answer.status) == ("unknown", "", "error")


def test_a_call_keeps_its_name_id_and_artifact() -> None:
    call = tool_call(name="read", args={}, id="c1")
    answer = error_answer(call, "failed", {"outcome": "unknown"})
    assert (answer.name, answer.tool_call_id, answer.content) == ("read", "c1", "failed")
    assert (answer.status, answer.artifact) == ("error", {"outcome": "unknown"})
