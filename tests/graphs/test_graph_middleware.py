"""LangChain agent middleware in ``create_fncall_graph``, as ``create_agent`` takes it.

Each hook kind runs where ``create_agent`` runs it, with LangChain's own middleware
classes: ``wrap_tool_call`` inside the tools node (``ToolRetryMiddleware``: a retry stays
one claimed call), ``wrap_model_call`` around the model call (``dynamic_prompt``,
``ModelFallbackMiddleware``), ``before_model``/``after_model`` as nodes with ``jump_to``
(``ModelCallLimitMiddleware``), ``before_agent``/``after_agent``, and middleware tools.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    ModelRequest,
    ToolRetryMiddleware,
    dynamic_prompt,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.replay import ReplayChatModel


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}
    return {"content": "", "tool_calls": [{"id": call_id, "type": "function", "function": fn}]}


HERMES_CALL = '<tool_call>\n{"name": "flaky", "arguments": {"x": 1}}\n</tool_call>'
ATTEMPTS: list[int] = []


@tool
def flaky(x: int) -> str:
    """Fails the first time."""
    ATTEMPTS.append(x)
    if len(ATTEMPTS) == 1:
        raise ConnectionError("try again")
    return "ok"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_wrap_tool_call_retries_inside_one_claimed_call(mode: str) -> None:
    ATTEMPTS.clear()
    model = ReplayChatModel([call("flaky", {"x": 1}), {"content": "done"}])
    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0.0, retry_on=(ConnectionError,))
    graph = create_fncall_graph(
        model, [flaky], dialect="native", middleware=[retry], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": mode}}
    payload = {"messages": [("user", "go")]}
    out = (
        graph.invoke(payload, config) if mode == "invoke" else await graph.ainvoke(payload, config)
    )
    assert ATTEMPTS == [1, 1]  # the retry ran the tool again, in the same claimed call
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["ok"]


def test_dynamic_prompt_reaches_a_prompt_dialects_rendering() -> None:
    @dynamic_prompt
    def polite(request: ModelRequest) -> str:
        return "Always answer politely."

    model = ReplayChatModel([{"content": "Certainly."}])
    graph = create_fncall_graph(model, [flaky], dialect="hermes", middleware=[polite])
    out = graph.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "Certainly."
    system = str(model.inputs[0][0].content)
    assert "Always answer politely." in system and "<tools>" in system  # rendered for hermes


def test_model_fallback_middleware_swaps_the_model() -> None:
    broken = ReplayChatModel([], model="broken")  # no replies left: it raises
    backup = ReplayChatModel([{"content": "from the backup"}], model="backup")
    graph = create_fncall_graph(
        broken, [flaky], dialect="native", middleware=[ModelFallbackMiddleware(backup)]
    )
    out = graph.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "from the backup"
    assert len(backup.inputs) == 1


def test_model_call_limit_jumps_to_the_end() -> None:
    replies = [call("flaky", {"x": i}, f"c{i}") for i in range(5)]
    model = ReplayChatModel(replies)
    ATTEMPTS.clear()
    ATTEMPTS.append(0)  # flaky succeeds from the first call on
    limit = ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")
    graph = create_fncall_graph(
        model, [flaky], dialect="native", middleware=[limit], checkpointer=InMemorySaver()
    )
    out = graph.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "l"}})
    assert len(model.inputs) == 2  # the third call never went to the model
    assert "limit" in out["messages"][-1].content.lower()
    nodes = set(graph.get_graph().nodes)
    assert {
        "ModelCallLimitMiddleware.before_model",
        "ModelCallLimitMiddleware.after_model",
    } <= nodes


class Bookends(AgentMiddleware):
    """Notes the start and the end of each run; brings a tool of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

        @tool
        def clock() -> str:
            """The time."""
            return "noon"

        self.tools = [clock]

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.seen.append(f"start:{len(state['messages'])}")
        return None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.seen.append(f"end:{len(state['messages'])}")
        return None


def test_agent_hooks_and_middleware_tools() -> None:
    bookends = Bookends()
    model = ReplayChatModel([call("clock", {}), {"content": "It is noon."}])
    graph = create_fncall_graph(model, [flaky], dialect="native", middleware=[bookends])
    out = graph.invoke({"messages": [("user", "time?")]})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["noon"]
    assert bookends.seen == ["start:1", "end:4"]


def test_hermes_calls_run_through_middleware() -> None:
    ATTEMPTS.clear()
    ATTEMPTS.append(0)
    seen: list[str] = []

    class Watch(AgentMiddleware):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            seen.append(request.tool_call["name"])
            return handler(request)

    model = ReplayChatModel([HERMES_CALL, "done"])
    graph = create_fncall_graph(model, [flaky], dialect="hermes", middleware=[Watch()])
    out = graph.invoke({"messages": [HumanMessage("go")]})
    assert seen == ["flaky"]
    assert isinstance(out["messages"][1], AIMessage) and out["messages"][1].tool_calls


def test_bad_middleware_is_refused_with_where() -> None:
    with pytest.raises(TypeError, match=r"middleware\[0\] must be a LangChain AgentMiddleware"):
        create_fncall_graph(ReplayChatModel([]), [flaky], middleware=[object()])  # type: ignore[list-item]


def test_the_products_own_middleware_is_refused_with_the_graphs_way() -> None:
    from fncall_graph.middleware import AtMostOnceMiddleware

    with pytest.raises(TypeError, match=r"create_fncall_graph does this itself.*idempotent_tools"):
        create_fncall_graph(ReplayChatModel([]), [flaky], middleware=[AtMostOnceMiddleware()])
