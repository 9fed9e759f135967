"""ReplayChatModel: recorded outputs in order, inputs recorded, streaming, stop, bind_tools."""

from __future__ import annotations

import json
import threading
from functools import reduce
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool

from fncall_graph.testing import ReplayChatModel, ReplayExhausted

DATA = Path(__file__).resolve().parents[2] / "fncall_graph" / "data"
HERMES_CALL = '<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>'


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴"


def _sum(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    return reduce(lambda a, b: a + b, chunks)


def test_plays_outputs_in_order_and_records_inputs() -> None:
    model = ReplayChatModel([HERMES_CALL, "有 3 张表。"])
    first = model.invoke([HumanMessage("数据库有几张表")])
    second = model.invoke("谢谢")
    assert first.content == HERMES_CALL
    assert second.content == "有 3 张表。"
    assert [[m.content for m in call] for call in model.inputs] == [["数据库有几张表"], ["谢谢"]]
    assert model.position == 2 and model.remaining == 0


def test_runs_out_with_a_clear_error() -> None:
    model = ReplayChatModel(["only"])
    model.invoke("a")
    with pytest.raises(ReplayExhausted, match=r"replay has 1 outputs, call 2 asked for more"):
        model.invoke("b")


def test_dict_outputs_replay_native_tool_calls() -> None:
    openai_style = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "需要查天气",
        "tool_calls": [
            {
                "id": "call_abc123",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
            },
            {"id": "call_bad", "type": "function", "function": {"name": "x", "arguments": "{"}},
        ],
    }
    langchain_style = {
        "content": "",
        "tool_calls": [{"name": "get_weather", "args": {"city": "上海"}}],
    }
    model = ReplayChatModel([openai_style, langchain_style])
    a = model.invoke("?")
    assert a.content == ""
    assert a.tool_calls == [
        {"name": "get_weather", "args": {"city": "北京"}, "id": "call_abc123", "type": "tool_call"}
    ]
    assert a.invalid_tool_calls[0]["id"] == "call_bad"
    assert a.additional_kwargs["reasoning_content"] == "需要查天气"
    b = model.invoke("?")
    assert b.tool_calls[0]["args"] == {"city": "上海"}


def test_stop_cuts_at_the_first_stop_sequence() -> None:
    text = "Thought: look it up\nAction: x\nObservation: invented\nFinal Answer: no"
    model = ReplayChatModel([text, text])
    assert model.invoke("q", stop=["Observation:"]).content == "Thought: look it up\nAction: x\n"
    chunks = list(model.stream("q", stop=["Final Answer:", "Action:"]))
    assert _sum(chunks).content == "Thought: look it up\n"
    assert model.calls[0]["stop"] == ["Observation:"]


def test_stream_gives_several_chunks_that_add_up() -> None:
    model = ReplayChatModel([HERMES_CALL, HERMES_CALL], chunk_size=5)
    chunks = list(model.stream("q"))
    assert len(chunks) > 5
    assert _sum(chunks).content == HERMES_CALL
    assert all(len(c.content) <= 5 for c in chunks)
    # default: token-ish pieces, the markers split over chunks as a server splits them
    pieces = [c.content for c in model.stream("q")]
    assert "<tool_call>" not in pieces and "".join(pieces) == HERMES_CALL


def test_stream_native_tool_calls_as_tool_call_chunks() -> None:
    out = {
        "content": "",
        "tool_calls": [
            {"name": "get_weather", "args": {"city": "北京"}, "id": "call_1"},
            {"name": "get_weather", "args": {"city": "广州"}, "id": "call_2"},
        ],
        "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    }
    model = ReplayChatModel([out])
    chunks = list(model.stream("q"))
    assert sum(len(c.tool_call_chunks) for c in chunks) == 4  # two pieces per call
    total = _sum(chunks)
    assert [(c["name"], c["args"], c["id"]) for c in total.tool_calls] == [
        ("get_weather", {"city": "北京"}, "call_1"),
        ("get_weather", {"city": "广州"}, "call_2"),
    ]
    assert total.usage_metadata["total_tokens"] == 7


async def test_async_paths() -> None:
    model = ReplayChatModel(["hello world", "again"])
    assert (await model.ainvoke("a")).content == "hello world"
    chunks = [c async for c in model.astream("b")]
    assert _sum(chunks).content == "again"
    assert len(model.inputs) == 2


def test_bind_tools_shares_the_cursor_and_records_the_tools() -> None:
    model = ReplayChatModel(["one", "two", "three"])
    bound = model.bind_tools([get_weather], tool_choice="any")
    assert model.invoke("a").content == "one"
    assert bound.invoke("b").content == "two"
    assert model.invoke("c").content == "three"
    assert bound.bound.bound_tools[0]["function"]["name"] == "get_weather"
    assert "tools" not in model.calls[0]
    assert model.calls[1]["tools"][0]["function"]["name"] == "get_weather"
    assert model.calls[1]["tool_choice"] == "any"
    assert len(model.inputs) == 3


def test_cursor_is_thread_safe() -> None:
    n = 64
    model = ReplayChatModel([str(i) for i in range(n)])
    got: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        text = model.invoke("x").content
        with lock:
            got.append(text)

    threads = [threading.Thread(target=call) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(n)]
    with pytest.raises(ReplayExhausted):
        model.invoke("x")


def test_raise_on_tools_raises_what_ollama_raises() -> None:
    ollama = pytest.importorskip("ollama")
    model = ReplayChatModel(["plain answer"], raise_on_tools=True, model="qwen:0.5b")
    with pytest.raises(ollama.ResponseError) as info:
        model.bind_tools([get_weather]).invoke("weather?")
    assert info.value.status_code == 400
    assert info.value.error == "registry.ollama.ai/library/qwen:0.5b does not support tools"
    # without tools the model answers; the failed call used no output
    assert model.invoke("hi").content == "plain answer"


def test_from_file_forms(tmp_path: Path) -> None:
    wrapped = tmp_path / "r.json"
    wrapped.write_text(
        json.dumps({"source": "test", "dialect": "hermes", "outputs": ["a", {"content": "b"}]})
    )
    bare = tmp_path / "b.json"
    bare.write_text(json.dumps(["x"]))
    lines = tmp_path / "l.jsonl"
    lines.write_text('"p"\n\n{"content": "q"}\n')
    m = ReplayChatModel.from_file(wrapped, chunk_size=2)
    assert (m.source, m.dialect, m.chunk_size) == ("test", "hermes", 2)
    assert [m.invoke("?").content for _ in range(2)] == ["a", "b"]
    assert ReplayChatModel.from_file(bare).invoke("?").content == "x"
    assert [ReplayChatModel.from_file(lines).outputs[i].content for i in (0, 1)] == ["p", "q"]
    broken = tmp_path / "n.json"
    broken.write_text(json.dumps({"source": "no outputs"}))
    with pytest.raises(ValueError, match="outputs"):
        ReplayChatModel.from_file(broken)


@pytest.mark.parametrize(
    "name", ["database-assistant_qwen-max_hermes.json", "weather_deepseek-v3_react.json"]
)
def test_bundled_recordings_load(name: str) -> None:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} is not bundled")
    model = ReplayChatModel.from_file(path)
    assert model.outputs and model.dialect
    assert isinstance(model.invoke("?").content, str)


def test_per_conversation_picks_the_reply_by_the_history() -> None:
    model = ReplayChatModel(["first", "second"], per_conversation=True)
    assert model.invoke([HumanMessage("a")]).content == "first"
    assert model.invoke([HumanMessage("b")]).content == "first"  # another conversation
    history = [HumanMessage("a"), AIMessageChunk(content="first"), HumanMessage("more")]
    assert model.invoke(history).content == "second"
    with pytest.raises(ReplayExhausted, match="call 3"):
        model.invoke([*history, AIMessageChunk(content="second"), HumanMessage("again")])


def test_per_conversation_from_a_spec() -> None:
    from fncall_graph.adapters.models import ModelSpecError, resolve_model

    model = resolve_model("replay:database-assistant?per-conversation")
    assert model.per_conversation and model.dialect == "hermes"
    assert resolve_model("replay:database-assistant").per_conversation  # it lists its questions
    assert not resolve_model("replay:database-assistant?in-order").per_conversation
    with pytest.raises(ModelSpecError, match="unknown replay option 'nosuch'"):
        resolve_model("replay:database-assistant?nosuch")


def test_per_conversation_with_questions_answers_the_question_asked() -> None:
    """A recording that lists its questions answers the last one asked, from its first
    reply, whatever came before; a question it does not know is an error naming both."""
    model = ReplayChatModel(
        [HERMES_CALL, "有 3 张表。", "你好。"],
        questions=["几张表", "你好"],
        dialect="hermes",
        per_conversation=True,
        model="replay:test",
    )
    assert model.invoke([HumanMessage("你好")]).content == "你好。"
    assert model.invoke([HumanMessage("几张表")]).content == HERMES_CALL
    step = [HumanMessage("几张表"), AIMessageChunk(content=HERMES_CALL), HumanMessage("<r>")]
    assert model.invoke(step).content == "有 3 张表。"
    answered = [*step, AIMessageChunk(content="有 3 张表。")]
    assert model.invoke([*answered, HumanMessage("你好")]).content == "你好。"
    with pytest.raises(
        ReplayExhausted, match=r"replay:test has no reply for '再见'.*几张表 \| 你好"
    ):
        model.invoke([*answered, HumanMessage("再见")])
    with pytest.raises(ReplayExhausted, match=r"no reply for 'hi': it was recorded answering"):
        model.invoke([HumanMessage("hi")])


def test_per_conversation_counts_steps_a_prompt_writes_into_the_user_message() -> None:
    """ReAct writes a turn's earlier steps into its one user message, each ended by the
    stop sequence: those are the replies already given."""
    model = ReplayChatModel.from_file(
        DATA / "weather_deepseek-v3_react.json", per_conversation=True
    )
    question = "Question: 北京和广州天气怎么样\n\n"
    stop = ["Observation:"]
    assert "北京" in model.invoke([HumanMessage(question)], stop=stop).content
    one = question + "Action: ...\nObservation: 晴\n"
    assert "广州" in model.invoke([HumanMessage(one)], stop=stop).content
    two = one + "Action: ...\nObservation: 多云\n"
    assert "Final Answer" in model.invoke([HumanMessage(two)], stop=stop).content


def test_questions_must_match_the_turns_of_the_outputs() -> None:
    with pytest.raises(ValueError, match="2 questions, but its outputs make 1 turns"):
        ReplayChatModel([HERMES_CALL, "done"], questions=["a", "b"], dialect="hermes")
    with pytest.raises(ValueError, match="1 outputs after the last"):
        ReplayChatModel(["done", HERMES_CALL], questions=["a"], dialect="hermes")


def test_a_spec_answers_per_conversation_only_for_a_recording_that_lists_its_questions(
    tmp_path: Path,
) -> None:
    from fncall_graph.adapters.models import resolve_model

    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"dialect": "hermes", "outputs": ["a", "b"]}))
    model = resolve_model(f"replay:{plain}")
    assert not model.per_conversation and model.model == f"replay:{plain}"
    assert [model.invoke("?").content for _ in range(2)] == ["a", "b"]
    assert resolve_model(f"replay:{plain}?per-conversation").per_conversation
    weather = resolve_model("replay:weather")
    assert weather.per_conversation and weather.questions == ["北京和广州天气怎么样"]
    with pytest.raises(ReplayExhausted, match="replay:weather has no reply for '上海呢'"):
        weather.invoke([HumanMessage("上海呢")])


def test_a_recording_played_in_order_names_itself_when_it_runs_out(tmp_path: Path) -> None:
    from fncall_graph.adapters.models import resolve_model

    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"outputs": ["a"]}))
    model = resolve_model(f"replay:{plain}")
    model.invoke("?")
    with pytest.raises(
        ReplayExhausted, match=rf"call 2 asked for more \(replay:{plain}, asked 'again'\)"
    ):
        model.invoke([HumanMessage("again")])


def test_every_reply_is_a_new_message_with_its_own_id() -> None:
    """LangChain stamps a reply without an id with its run's id, on the object returned:
    the recording's own output must not be that object, or its next play repeats the id."""
    recorded = AIMessage("hello", id="recorded", tool_calls=[{"name": "x", "args": {}, "id": "c"}])
    model = ReplayChatModel([recorded, "again"], per_conversation=True)
    replies = [model.invoke([HumanMessage("a")]) for _ in range(2)]
    replies.append(reduce(lambda a, b: a + b, model.stream([HumanMessage("a")])))
    ids = [r.id for r in replies]
    assert all(ids) and len(set(ids)) == 3 and "recorded" not in ids
    assert all(r.content == "hello" and r.tool_calls[0]["id"] == "c" for r in replies)
    replies[0].tool_calls[0]["args"]["changed"] = True
    assert model.outputs[0].id == "recorded" and model.outputs[0].tool_calls[0]["args"] == {}


@pytest.mark.parametrize("dialect", ["hermes", "native"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_question_asked_again_in_a_thread_keeps_both_turns(dialect: str, stream: bool) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from fncall_graph import create_fncall_graph

    call = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call>'
        if dialect == "hermes"
        else {"content": "", "tool_calls": [{"name": "get_weather", "args": {"city": "北京"}}]}
    )
    model = ReplayChatModel(
        [call, "北京晴。"],
        questions=["北京天气"],
        dialect=dialect if dialect == "hermes" else None,
        per_conversation=True,
    )
    graph = create_fncall_graph(model, [get_weather], dialect=dialect, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    for _ in range(2):
        turn = {"messages": [HumanMessage("北京天气")]}
        if stream:
            list(graph.stream(turn, cfg, stream_mode="messages"))
        else:
            graph.invoke(turn, cfg)
    history = graph.get_state(cfg).values["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"] * 2
    assert [m.content for m in history if m.type == "ai" and not m.tool_calls] == ["北京晴。"] * 2
    assert len({m.id for m in history}) == len(history)
