"""The middleware and ``create_fncall_graph`` refuse the same bad value of an argument
they share with the same error and the same words: both call the option's one rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.tools import tool

from fncall_graph import (
    AtMostOnceMiddleware,
    BoundApprovalMiddleware,
    DialectMiddleware,
    create_fncall_graph,
)
from fncall_graph.testing import ReplayChatModel


@tool
def log(entry: str) -> str:
    """Append an entry to the log."""
    return "logged"


def graph_with(**options: Any) -> Any:
    return create_fncall_graph(ReplayChatModel(["done"]), [log], **options)


def refusal(make: Callable[[], Any]) -> tuple[type[BaseException], str]:
    with pytest.raises((TypeError, ValueError)) as caught:
        make()
    return caught.type, str(caught.value)


@pytest.mark.parametrize(
    ("middleware", "option", "value"),
    [
        (lambda v: DialectMiddleware("hermes", max_calls_per_reply=v), "max_calls_per_reply", 0),
        (lambda v: DialectMiddleware("hermes", fallback=v), "fallback", "native"),
        (lambda v: DialectMiddleware("hermes", fallback=v), "fallback", "klingon"),
        (lambda v: DialectMiddleware("native", call_format=v), "call_format", "klingon"),
        (lambda v: AtMostOnceMiddleware(lease=v), "lease", 0),
        (lambda v: AtMostOnceMiddleware(lease=v), "lease", "soon"),
        (lambda v: AtMostOnceMiddleware(idempotent_tools=v), "idempotent_tools", "log"),
        (lambda v: BoundApprovalMiddleware(interrupt_on=v), "interrupt_on", ["log"]),
        (
            lambda v: BoundApprovalMiddleware(interrupt_on={"log": True}, interrupt_mode=v),
            "interrupt_mode",
            "each",
        ),
        # a config's decisions: normalize_interrupt_on's check, on both sides
        (
            lambda v: BoundApprovalMiddleware(interrupt_on=v),
            "interrupt_on",
            {"log": {"allowed_decisions": ["maybe"]}},
        ),
    ],
)
def test_the_middleware_and_the_graph_refuse_a_bad_value_alike(
    middleware: Callable[[Any], Any], option: str, value: Any
) -> None:
    from_middleware = refusal(lambda: middleware(value))
    from_graph = refusal(lambda: graph_with(**{option: value}))
    assert from_middleware == from_graph
    assert option in from_graph[1] or "dialect" in from_graph[1]  # it names what is wrong
