"""One model call is made ready once: a prompt dialect's ``adapter`` prepares it with its
rendering and the ``model`` node sends that call; a native call is prepared in ``model``."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.models import chat_model
from fncall_graph.testing import ReplayChatModel

CALL = {
    "hermes": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call>',
    "native": {"content": "", "tool_calls": [{"name": "get_weather", "args": {"city": "北京"}}]},
}


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return "晴"


@pytest.mark.parametrize("run", ["invoke", "ainvoke", "stream"])
@pytest.mark.parametrize("dialect", ["hermes", "native"])
async def test_one_prepare_call_per_model_call(
    dialect: str, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[object] = []
    real = chat_model.prepare_call

    def counted(*args, **kwargs):
        prepared.append(kwargs["dialect"])
        return real(*args, **kwargs)

    monkeypatch.setattr(chat_model, "prepare_call", counted)
    model = ReplayChatModel([CALL[dialect], "北京晴。"] * 2)
    graph = create_fncall_graph(model, [get_weather], dialect=dialect, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    for question in ("北京天气", "再问一次"):
        turn = {"messages": [("user", question)]}
        if run == "invoke":
            graph.invoke(turn, cfg)
        elif run == "ainvoke":
            await graph.ainvoke(turn, cfg)
        else:
            list(graph.stream(turn, cfg, stream_mode=["messages", "updates"]))
    assert len(model.inputs) == 4  # two turns, two model calls each
    assert len(prepared) == len(model.inputs)
    history = graph.get_state(cfg).values["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"] * 2


def test_the_adapters_update_holds_only_its_rendering_when_copied_or_shown() -> None:
    """A server pickles and shows (as JSON) what a run streams: the ``adapter``'s update
    carries the rendering, not the call made ready with it (which holds the model)."""
    import pickle

    import orjson

    model = ReplayChatModel([CALL["hermes"], "北京晴。"])
    graph = create_fncall_graph(model, [get_weather], dialect="hermes")
    updates = list(graph.stream({"messages": [("user", "北京天气")]}, stream_mode="updates"))
    rendered = [u["adapter"]["rendered_input"] for u in updates if "adapter" in u]
    assert len(rendered) == 2 and all(r.call is not None for r in rendered)
    copied = pickle.loads(pickle.dumps(updates))
    assert [u["adapter"]["rendered_input"].call for u in copied if "adapter" in u] == [None] * 2
    shown = orjson.loads(orjson.dumps(rendered[0], default=lambda o: None))
    assert set(shown) == {"messages", "key"}
