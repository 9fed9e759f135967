"""``create_fncall_graph`` checks each option by its one rule (``GraphOptions``): a bad
value is refused before anything is built, with an error naming the argument."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.guarantees import GraphOptions, check_option
from fncall_graph.testing import ReplayChatModel


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


def build(**options: Any) -> Any:
    return create_fncall_graph(ReplayChatModel(["done"]), [read_file], **options)


@pytest.mark.parametrize(
    ("option", "value", "error", "message"),
    [
        ("max_iterations", 0, ValueError, "max_iterations must be at least 1, got 0"),
        ("max_iterations", "ten", ValueError, "max_iterations must be at least 1, got ten"),
        ("max_repeats", 0, ValueError, "max_repeats must be at least 1 or None, got 0"),
        (
            "max_calls_per_reply",
            -1,
            ValueError,
            "max_calls_per_reply must be at least 1 or None, got -1",
        ),
        ("max_concurrency", 0, ValueError, "max_concurrency must be at least 1, got 0"),
        ("max_result_chars", 0, ValueError, "max_result_chars must be at least 1 or None, got 0"),
        (
            "max_stored_result_chars",
            0,
            ValueError,
            "max_stored_result_chars must be at least 1 or None, got 0",
        ),
        ("tool_timeout", 0, ValueError, "tool_timeout must be positive seconds or None, got 0"),
        ("lease", -5, ValueError, "lease must be positive seconds or None, got -5"),
        ("lease", "1m", ValueError, "lease must be positive seconds or None, got '1m'"),
        ("multitask", "drop", ValueError, "multitask must be 'enqueue' or 'reject', got 'drop'"),
        (
            "durability",
            "never",
            ValueError,
            "durability must be 'sync', 'async' or 'exit', got 'never'",
        ),
        (
            "constrained",
            "always",
            ValueError,
            "constrained must be None, True, False or 'first_call', got 'always'",
        ),
        (
            "interrupt_mode",
            "each",
            ValueError,
            "interrupt_mode must be 'batched' or 'per_call', got 'each'",
        ),
        (
            "interrupt_on",
            "everything",
            ValueError,
            "interrupt_on must be a mapping of tool names or 'annotations', got 'everything'",
        ),
        ("interrupt_on", ["read_file"], TypeError, "interrupt_on must be a dict of tool name"),
        (
            "idempotent_tools",
            "read_file",
            TypeError,
            "idempotent_tools must be a list of tool names, got the string 'read_file'",
        ),
        (
            "fallback",
            "native",
            ValueError,
            r"fallback must be a prompt dialect \(hermes, qwen or react\), got 'native'",
        ),
        ("fallback", "klingon", ValueError, "unknown dialect 'klingon'"),
        ("call_format", "klingon", ValueError, "call_format: unknown call format 'klingon'"),
    ],
)
def test_a_bad_option_is_refused_naming_the_argument(
    option: str, value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build(**{option: value})


def test_a_rule_refuses_before_the_model_is_resolved() -> None:
    # no model spec at all: the option's error comes first, not the model's
    with pytest.raises(ValueError, match="max_iterations must be at least 1"):
        create_fncall_graph("no-such-provider:model", [read_file], max_iterations=0)


def test_interrupt_on_needs_a_checkpointer_that_saves() -> None:
    with pytest.raises(ValueError, match="interrupt_on needs a checkpointer"):
        build(interrupt_on={"read_file": True}, checkpointer=False)
    with pytest.raises(ValueError, match="interrupt_on needs a checkpointer"):
        build(interrupt_on="annotations", checkpointer=False)
    build(interrupt_on={}, checkpointer=False)  # nothing gated: nothing to save


# a good value for each of GraphOptions' fields
GOOD: dict[str, Any] = {
    "max_iterations": 10,
    "max_repeats": None,
    "max_calls_per_reply": 32,
    "max_concurrency": 8,
    "max_result_chars": None,
    "max_stored_result_chars": 1_000,
    "multitask": "enqueue",
    "lease": None,
    "tool_timeout": 0.5,
    "constrained": "first_call",
    "durability": "exit",
    "interrupt_mode": "per_call",
    "interrupt_on": {"read_file": True},
    "idempotent_tools": ["read_file"],
    "fallback": "hermes",
    "call_format": "qwen3-coder",
    "checkpointer": None,
}


def test_the_options_are_kept_as_used() -> None:
    options = GraphOptions(**GOOD)
    assert options.fallback.name == "hermes"  # the dialect itself
    assert options.call_format == "hermes"  # the family's format
    assert options.idempotent_tools == ("read_file",)
    assert not options.saves
    graph = build(checkpointer=InMemorySaver(), multitask="reject", lease=5)
    assert graph.config["configurable"]["fncall_multitask"] == "reject"
    assert graph.config["configurable"]["fncall_lease"] == 5


def test_every_option_of_the_graph_has_its_one_rule() -> None:
    assert set(GOOD) == {f.name for f in fields(GraphOptions)}
    for name, value in GOOD.items():
        if name != "checkpointer":
            check_option(name, value)
    with pytest.raises(KeyError):
        check_option("no_such_option", 1)
