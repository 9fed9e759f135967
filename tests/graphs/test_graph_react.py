"""The graph in the ReAct dialect, and the fallback to it.

Seed 004: deepseek-v3 answers "北京和广州天气怎么样" under LangChain's JSON-blob ReAct
prompt with two serial ``get_weather`` actions and a final answer. Its recorded replies
are replayed; ``get_weather`` is a local tool with the seed's schema and canned results.
Then the fallback: a model whose provider refuses tools, and a model class without
``bind_tools`` at all, both end up speaking ReAct, and a thread remembers the switch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.testing import ReplayChatModel

FIXTURE = Path(__file__).parents[1] / "fixtures" / "seed004_react.json"
REPLAY = Path(__file__).parents[2] / "fncall_graph" / "data" / "weather_deepseek-v3_react.json"
SEED: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
OBS: list[str] = SEED["observations"]


def weather_tool() -> BaseTool:
    """``get_weather`` with seed 004's schema, answering with the seed's canned data."""

    def get_weather(location: str) -> str:
        return {"北京": OBS[0], "广州": OBS[1]}[location]

    return StructuredTool.from_function(
        func=get_weather,
        name=SEED["tools"][0]["name"],
        description=SEED["tools"][0]["description"],
        args_schema=SEED["tools"][0]["parameters"],
    )


def seed_replies() -> list[str]:
    """deepseek-v3's replies of the run whose requests the seed prints.

    The replay file holds the first run; the printed requests come from a second run
    whose second reply words its thought differently (``logged_output_2``).
    """
    outputs = json.loads(REPLAY.read_text(encoding="utf-8"))["outputs"]
    assert outputs == SEED["outputs"]
    return [outputs[0], SEED["logged_output_2"], outputs[2]]


def seed_requests() -> list[str]:
    """The user message of each of the seed's three requests, as the graph must send them.

    The third request in the seed also holds the stray "Observation" the provider left at
    the end of the second reply (a stop sequence cut short). The canonical history keeps
    calls, not raw text, so that leftover is not written back.
    """
    requests = list(SEED["user_messages"])
    cleaned = requests[2].replace("```\nObservation\nObservation:", "```\nObservation:")
    assert cleaned != requests[2]
    requests[2] = cleaned
    return requests


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


# --------------------------------------------------------------------------- seed 004


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_seed004_weather_loop(mode: str) -> None:
    model = ReplayChatModel(seed_replies())
    graph = create_fncall_graph(
        model,
        [weather_tool()],
        dialect="react",
        checkpointer=InMemorySaver(),
        keep_model_input=True,
    )
    question = {"messages": [("user", SEED["question"])]}
    if mode == "invoke":
        result = graph.invoke(question, cfg("w"))
    else:
        result = await graph.ainvoke(question, cfg("w"))

    # two serial actions, each in its own turn of the loop, then the final answer
    messages = result["messages"]
    assert [type(m) for m in messages] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert [c["args"] for c in messages[1].tool_calls] == [{"location": "北京"}]
    assert [c["args"] for c in messages[3].tool_calls] == [{"location": "广州"}]
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == OBS
    assert messages[2].tool_call_id == messages[1].tool_calls[0]["id"]
    assert messages[4].tool_call_id == messages[3].tool_calls[0]["id"]
    final = messages[-1]
    assert final.tool_calls == [] and final.invalid_tool_calls == []
    assert final.content == SEED["outputs"][2].split("Final Answer: ", 1)[1]

    # each request is the seed's: system prompt + one Question/scratchpad user message
    assert len(model.inputs) == 3
    for step, (sent, expected) in enumerate(zip(model.inputs, seed_requests(), strict=True)):
        assert [type(m) for m in sent] == [SystemMessage, HumanMessage], f"request {step + 1}"
        assert sent[0].content == SEED["system_prompt"], f"request {step + 1}"
        assert sent[1].content == expected, f"request {step + 1}"
    # the stop sequence goes to the model on every call, and no native tools do
    for call in model.calls:
        assert call["stop"] == [SEED["stop"]] == ["Observation:"]
        assert "tools" not in call

    state = graph.get_state(cfg("w")).values
    assert state["dialect"] == "react"
    assert state["model_input"][1] == {"role": "user", "content": seed_requests()[2]}


# --------------------------------------------------------------------------- fallback

ACTION = 'Thought: 先查北京。\nAction:\n```\n{{"action": "get_weather", "action_input": {{"location": "{city}"}}}}\n```'


def final(text: str) -> str:
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_tools_refused_falls_back_to_react_and_stays(mode: str) -> None:
    model = ReplayChatModel(
        [ACTION.format(city="北京"), final("北京晴"), ACTION.format(city="广州"), final("广州晴")],
        raise_on_tools=True,
        model="deepseek-v3",
    )
    graph = create_fncall_graph(model, [weather_tool()], checkpointer=InMemorySaver())

    async def ask(text: str) -> dict[str, Any]:
        payload = {"messages": [("user", text)]}
        if mode == "invoke":
            return graph.invoke(payload, cfg("t"))
        return await graph.ainvoke(payload, cfg("t"))

    first = await ask("北京天气怎么样")
    # one refused native call (tools bound), then two ReAct calls
    assert len(model.calls) == 3
    assert model.calls[0].get("tools") and model.calls[0]["tools"][0]["function"]["name"] == (
        "get_weather"
    )
    assert all("tools" not in c and c["stop"] == ["Observation:"] for c in model.calls[1:])
    assert first["messages"][-1].content == "北京晴"
    tool_results = [m.content for m in first["messages"] if isinstance(m, ToolMessage)]
    assert tool_results == [OBS[0]]
    state = graph.get_state(cfg("t")).values
    assert state["dialect"] == "react"
    assert "does not support tools" in state["fallback_reason"]
    assert "deepseek-v3" in state["fallback_reason"]
    assert not state.get("pending_fallback")
    # the refused attempt left nothing in the canonical history
    assert [type(m) for m in first["messages"]] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]

    second = await ask("广州呢")
    # straight to ReAct: two more calls, none of them with tools
    assert len(model.calls) == 5
    assert all("tools" not in c for c in model.calls[3:])
    assert second["messages"][-1].content == "广州晴"
    # the earlier turn is history; the turn being worked on is the last user message
    assert [type(m) for m in model.inputs[3]] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert model.inputs[3][-1].content == "Question: 广州呢\n\n"


class PlainChatModel(BaseChatModel):
    """A chat model with no ``bind_tools``: it only turns text into text."""

    replies: list[str]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    stops: list[list[str] | None] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "plain"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        self.stops.append(stop)
        reply = AIMessage(self.replies[len(self.seen) - 1])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def plain_model() -> PlainChatModel:
    return PlainChatModel(replies=[ACTION.format(city="广州"), final("广州晴")])


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_model_without_bind_tools_auto_starts_in_fallback(mode: str) -> None:
    model = plain_model()
    graph = create_fncall_graph(model, [weather_tool()], checkpointer=InMemorySaver())
    payload = {"messages": [("user", "广州天气")]}
    if mode == "invoke":
        result = graph.invoke(payload, cfg("p"))
    else:
        result = await graph.ainvoke(payload, cfg("p"))
    assert result["messages"][-1].content == "广州晴"
    assert len(model.seen) == 2  # no failed native attempt
    assert model.stops == [["Observation:"], ["Observation:"]]
    assert model.seen[0][0].content == SEED["system_prompt"]
    assert graph.get_state(cfg("p")).values["dialect"] == "react"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_model_without_bind_tools_native_falls_back(mode: str) -> None:
    model = plain_model()
    graph = create_fncall_graph(
        model, [weather_tool()], dialect="native", checkpointer=InMemorySaver()
    )
    payload = {"messages": [("user", "广州天气")]}
    if mode == "invoke":
        result = graph.invoke(payload, cfg("n"))
    else:
        result = await graph.ainvoke(payload, cfg("n"))
    assert result["messages"][-1].content == "广州晴"
    assert [m.content for m in result["messages"] if isinstance(m, ToolMessage)] == [OBS[1]]
    # bind_tools raised before any model call, so the model saw only ReAct prompts
    assert len(model.seen) == 2
    state = graph.get_state(cfg("n")).values
    assert state["dialect"] == "react"
    assert "NotImplementedError" in state["fallback_reason"]
    assert "bind_tools" in state["fallback_reason"]


# --------------------------------------------------------------------------- unparsed_limit

HERMES_BROKEN = ["<tool_call>\n{not json", '<tool_call>\n{"name": "get_weather", "arguments": {']


@pytest.mark.parametrize("limit", [1, 2])
def test_unreadable_hermes_replies_switch_to_react(limit: int) -> None:
    model = ReplayChatModel([*HERMES_BROKEN[:limit], ACTION.format(city="北京"), final("晴")])
    graph = create_fncall_graph(
        model,
        [weather_tool()],
        dialect="hermes",
        unparsed_limit=limit,
        checkpointer=InMemorySaver(),
    )
    result = graph.invoke({"messages": [("user", "北京天气")]}, cfg("u"))
    assert result["messages"][-1].content == "晴"
    # every unreadable call was answered with an error before the next model call
    errors = [m for m in result["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == limit
    assert all("could not be read" in e.content for e in errors)
    # the Hermes calls saw the Hermes prompt; after the switch, the ReAct prompt
    assert all(i[0].content.startswith("# Tools") for i in model.inputs[:limit])
    assert all(i[0].content == SEED["system_prompt"] for i in model.inputs[limit:])
    assert [c["stop"] for c in model.calls[limit:]] == [["Observation:"]] * 2
    state = graph.get_state(cfg("u")).values
    assert state["dialect"] == "react"
    assert f"{limit} replies in a row" in state["fallback_reason"]


def test_one_unreadable_reply_below_the_limit_stays_hermes() -> None:
    fixed = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "北京"}}\n</tool_call>'
    model = ReplayChatModel([HERMES_BROKEN[0], fixed, "晴"])
    graph = create_fncall_graph(
        model, [weather_tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    result = graph.invoke({"messages": [("user", "北京天气")]}, cfg("h"))
    assert result["messages"][-1].content == "晴"
    tool_results = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in tool_results] == ["error", "success"]
    assert tool_results[1].content == OBS[0]
    state = graph.get_state(cfg("h")).values
    assert state["dialect"] == "hermes" and not state.get("fallback_reason")


def test_each_node_shows_its_own_work_when_native_calling_fails() -> None:
    """Studio's view: the model's refused call hands over to react_fallback (with the
    reason), the adapter renders ReAct, the model sends that and shows its raw reply.
    After the tools, the native graph's plain edge leads to the model, which sends the
    thread (ReAct now) on to the adapter before it calls."""
    model = ReplayChatModel(
        [ACTION.format(city="北京"), final("北京晴")], raise_on_tools=True, model="deepseek-v3"
    )
    graph = create_fncall_graph(model, [weather_tool()], checkpointer=InMemorySaver())
    updates = list(
        graph.stream({"messages": [("user", "北京天气怎么样")]}, cfg("s"), stream_mode="updates")
    )
    steps = [next(iter(u)) for u in updates]
    assert steps == [
        "model",
        "react_fallback",
        "adapter",
        "model",
        "tools",
        "model",
        "adapter",
        "model",
    ]
    assert not updates[0]["model"]  # the refused call adds nothing to the history
    assert updates[5]["model"] is None  # sent on to be rendered, nothing called
    assert len(model.inputs) == 3  # the refused call, then one per rendering
    switched = updates[1]["react_fallback"]
    assert switched["dialect"] == "react"
    assert "does not support tools" in switched["fallback_reason"]
    prompt = updates[2]["adapter"]["model_input"]
    # the model was sent exactly the adapter's rendering (the refused call came first)
    assert prompt == convert_to_openai_messages(model.inputs[1])
    assert "Action:" in prompt[0]["content"]
    first = updates[3]["model"]
    # the raw reply as written (ReAct text), and the canonical call read from it
    assert first["model_output"]["content"] == ACTION.format(city="北京")
    assert first["messages"][0].tool_calls[0]["args"] == {"location": "北京"}
    assert "Action:" not in first["messages"][0].content
    # neither the prompt nor the raw reply is checkpointed
    assert all(
        "model_input" not in s.values and "model_output" not in s.values
        for s in graph.get_state_history(cfg("s"))
    )


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_a_switched_thread_s_approved_call_goes_on_through_the_adapter(mode: str) -> None:
    """A native graph whose thread fell back to ReAct: the approval's edge chooses the
    adapter itself, and the next turn's plain edge reaches the model, which sends the
    call on to the adapter; each call is rendered once and sent as rendered."""
    model = ReplayChatModel(
        [ACTION.format(city="北京"), final("北京晴"), ACTION.format(city="广州"), final("广州晴")],
        raise_on_tools=True,
        model="deepseek-v3",
    )
    graph = create_fncall_graph(
        model,
        [weather_tool()],
        checkpointer=InMemorySaver(),
        interrupt_on={"get_weather": True},
    )

    async def steps(payload: Any) -> list[str]:
        if mode == "invoke":
            chunks = list(graph.stream(payload, cfg("a"), stream_mode="updates"))
        else:
            chunks = [c async for c in graph.astream(payload, cfg("a"), stream_mode="updates")]
        return [next(iter(c)) for c in chunks]

    def approval() -> Command:
        [pending] = graph.get_state(cfg("a")).interrupts
        return Command(resume=bind_decisions(pending.value, [{"type": "approve"}]))

    first = await steps({"messages": [("user", "北京天气怎么样")]})
    assert first == ["model", "react_fallback", "adapter", "model", "__interrupt__"]
    assert await steps(approval()) == ["approve", "tools", "model", "adapter", "model"]
    second = await steps({"messages": [("user", "广州呢")]})
    assert second == ["model", "adapter", "model", "__interrupt__"]
    assert await steps(approval()) == ["approve", "tools", "model", "adapter", "model"]
    values = graph.get_state(cfg("a")).values
    assert values["messages"][-1].content == "广州晴" and values["dialect"] == "react"
    # one refused native call, then each ReAct call once, as the adapter rendered it
    assert len(model.calls) == 5
    assert [m.content for m in values["messages"] if isinstance(m, ToolMessage)] == OBS[:2]
