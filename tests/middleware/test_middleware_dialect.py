"""``DialectMiddleware`` on LangChain's own ``create_agent``: a model without native
calling that writes Hermes ``<tool_call>`` markup gets its calls run, and a model whose
native calling is refused is called again in ReAct, the thread staying in ReAct."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from fncall_graph import DialectMiddleware
from fncall_graph.testing import ReplayChatModel

HERMES_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
REACT_CALL = (
    "Thought: I add them.\nAction:\n```json\n"
    '{"action": "add", "action_input": {"a": %d, "b": %d}}\n```'
)
REACT_FINAL = (
    'Thought: done.\nAction:\n```json\n{"action": "Final Answer", "action_input": "%s"}\n```'
)


def adder(ran: list[dict]):
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append({"a": a, "b": b})
        return a + b

    return add


async def ask(agent, text: str, mode: str, config=None):
    payload = {"messages": [("user", text)]}
    if mode == "invoke":
        return agent.invoke(payload, config)
    return await agent.ainvoke(payload, config)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_a_hermes_model_without_native_calling_gets_its_calls_run(mode):
    ran: list[dict] = []
    # LangChain's own fake model: no bind_tools, its replies are text with the markup
    model = GenericFakeChatModel(messages=iter([AIMessage(HERMES_CALL), AIMessage("It is 3.")]))
    agent = create_agent(model, [adder(ran)], middleware=[DialectMiddleware("hermes")])
    out = await ask(agent, "1+2?", mode)
    assert ran == [{"a": 1, "b": 2}]
    call = out["messages"][1]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["args"] == {"a": 1, "b": 2}
    assert "<tool_call>" not in call.text  # canonical: the call is in tool_calls only
    result = out["messages"][2]
    assert isinstance(result, ToolMessage) and result.content == "3"
    assert result.tool_call_id == call.tool_calls[0]["id"]
    assert out["messages"][-1].content == "It is 3."


def test_the_model_is_sent_the_hermes_prompt_and_the_results_as_hermes_text():
    ran: list[dict] = []
    model = ReplayChatModel([HERMES_CALL, "It is 3."])
    agent = create_agent(
        model,
        [adder(ran)],
        system_prompt="You are a calculator.",
        middleware=[DialectMiddleware("hermes")],
    )
    agent.invoke({"messages": [("user", "1+2?")]})
    first, second = model.inputs
    system = first[0].content
    assert system.startswith("You are a calculator.") and "<tools>" in system
    assert '"name": "add"' in system
    assert all("tools" not in c for c in model.calls)  # nothing bound natively
    # the call and its result written back in the dialect's own text
    assert "<tool_call>" in second[-2].content and "<tool_response>" in second[-1].content


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_refused_native_calling_falls_back_to_react_and_the_thread_stays(mode, tmp_path):
    ran: list[dict] = []
    model = ReplayChatModel(
        [REACT_CALL % (1, 2), REACT_FINAL % "3", REACT_CALL % (2, 2), REACT_FINAL % "4"],
        raise_on_tools=True,  # Ollama's "does not support tools"
        model="tiny-model",
    )
    path = str(tmp_path / "c.db")
    async with AsyncExitStack() as stack:
        if mode == "invoke":
            saver = stack.enter_context(SqliteSaver.from_conn_string(path))
        else:
            saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(path))
        agent = create_agent(
            model, [adder(ran)], middleware=[DialectMiddleware()], checkpointer=saver
        )
        config = {"configurable": {"thread_id": "t"}}
        first = await ask(agent, "1+2?", mode, config)
        assert first["messages"][-1].content == "3"
        # one refused native call (tools bound), then the same call in ReAct
        assert len(model.calls) == 3
        assert model.calls[0].get("tools")
        assert all("tools" not in c for c in model.calls[1:])
        snapshot = agent.get_state(config) if mode == "invoke" else await agent.aget_state(config)
        state = snapshot.values
        assert state["dialect"] == "react"
        assert "does not support tools" in state["fallback_reason"]
        assert "tiny-model" in state["fallback_reason"]
        second = await ask(agent, "2+2?", mode, config)
    assert second["messages"][-1].content == "4"
    assert len(model.calls) == 5  # ReAct from the start: native is not tried again
    assert ran == [{"a": 1, "b": 2}, {"a": 2, "b": 2}]


def test_other_failures_are_not_a_fallback():
    class Broken(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, *args, **kwargs):
            raise RuntimeError("the server crashed")

    agent = create_agent(
        Broken(messages=iter([])), [adder([])], middleware=[DialectMiddleware("native")]
    )
    with pytest.raises(RuntimeError, match="the server crashed"):
        agent.invoke({"messages": [("user", "1+2?")]})


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"unknown dialect 'hermez'; known dialects: hermes"):
        DialectMiddleware("hermez")
    with pytest.raises(ValueError, match="fallback must be a prompt dialect"):
        DialectMiddleware("hermes", fallback="native")


def test_a_streamed_reply_shows_its_text_and_never_the_call_markup():
    ran: list[dict] = []
    model = ReplayChatModel([f"Let me add.{HERMES_CALL}", "It is 3."], chunk_size=3)
    agent = create_agent(model, [adder(ran)], middleware=[DialectMiddleware("hermes")])
    shown = "".join(
        chunk.text
        for chunk, meta in agent.stream({"messages": [("user", "1+2?")]}, stream_mode="messages")
        if meta.get("langgraph_node") == "model"
    )
    assert shown == "Let me add.It is 3."
    assert ran == [{"a": 1, "b": 2}]
