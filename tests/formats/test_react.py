"""The ReAct dialect against seed 004: deepseek-v3 looks up the weather of 北京 and 广州.

Golden strings come from ``tests/fixtures/seed004_react.json`` (made by
``tests/fixtures/extract_seed004.py`` from the article): the system prompt, the user
message of each of the three model calls, deepseek-v3's replies and the tool results.
"""

from __future__ import annotations

import json
import random
from functools import reduce
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import StructuredTool

from fncall_graph.adapters import get_dialect, normalize, with_dialect
from fncall_graph.adapters.formats.base import text_of
from fncall_graph.adapters.formats.calls import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ReasoningDelta,
)
from fncall_graph.adapters.formats.react import ReActDialect
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.testing import ReplayChatModel

FIXTURE = Path(__file__).parents[1] / "fixtures" / "seed004_react.json"
REPLAY = Path(__file__).parents[2] / "fncall_graph" / "data" / "weather_deepseek-v3_react.json"
SEED: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
QUESTION: str = SEED["question"]
OUTPUTS: list[str] = SEED["outputs"]
OBS: list[str] = SEED["observations"]
SEED_TOOL: dict[str, Any] = SEED["tools"][0]

# get_weather as an MCP server lists it
MCP_TOOL = {
    "name": SEED_TOOL["name"],
    "description": SEED_TOOL["description"],
    "inputSchema": SEED_TOOL["parameters"],
}


def _weather(location: str) -> str:
    return {"北京": OBS[0], "广州": OBS[1]}[location]


# the same tool as a LangChain tool with the seed's JSON schema
LC_TOOL = StructuredTool.from_function(
    func=_weather,
    name="get_weather",
    description="Get weather",
    args_schema=SEED_TOOL["parameters"],
)

react = ReActDialect()


def stream_events(text: str, chunks: list[str]) -> tuple[list[Any], AIMessage]:
    parser = react.stream_parser()
    events: list[Any] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    assert "".join(chunks) == text
    return events, parser.message()


def calls(message: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


# --------------------------------------------------------------------------- golden: render


def test_registry_and_stop() -> None:
    assert isinstance(get_dialect("react"), ReActDialect)
    assert react.stop == ("Observation:",) == (SEED["stop"],)


@pytest.mark.parametrize("tool", [MCP_TOOL, LC_TOOL, SEED_TOOL], ids=["mcp", "langchain", "openai"])
def test_first_request_is_the_seeds(tool: Any) -> None:
    rendered = react.render([HumanMessage(QUESTION)], [tool])
    assert [type(m) for m in rendered] == [SystemMessage, HumanMessage]
    assert rendered[0].content == SEED["system_prompt"]
    assert rendered[1].content == SEED["user_messages"][0]


def test_second_request_after_the_beijing_call() -> None:
    """A canonical AIMessage and its ToolMessage render as the seed's second request."""
    call = AIMessage(
        content="",
        additional_kwargs={
            "reasoning_content": "我需要获取北京和广州的天气信息。首先,我将获取北京的天气。"
        },
        tool_calls=[
            {
                "name": "get_weather",
                "args": {"location": "北京"},
                "id": "call_bj",
                "type": "tool_call",
            }
        ],
    )
    history = [HumanMessage(QUESTION), call, ToolMessage(OBS[0], tool_call_id="call_bj")]
    rendered = react.render(history, [MCP_TOOL])
    assert [m.content for m in rendered] == [SEED["system_prompt"], SEED["user_messages"][1]]
    # the scratchpad holds the step exactly as deepseek-v3 wrote it
    assert react.write_assistant(call) == OUTPUTS[0]


def test_third_request_after_both_calls() -> None:
    """Replies parsed from the model render back into the seed's third request.

    The seed's scratchpad also carries the stray "Observation" its provider left at the end
    of the second reply (a stop sequence cut short); the canonical history has no place
    for it, so the rendered request is the seed's without it.
    """
    step1, step2 = react.parse(OUTPUTS[0]), react.parse(SEED["logged_output_2"])
    history = [
        HumanMessage(QUESTION),
        step1,
        ToolMessage(OBS[0], tool_call_id=step1.tool_calls[0]["id"]),
        step2,
        ToolMessage(OBS[1], tool_call_id=step2.tool_calls[0]["id"]),
    ]
    expected = SEED["user_messages"][2].replace(
        "```\nObservation\nObservation:", "```\nObservation:"
    )
    assert expected != SEED["user_messages"][2]
    assert react.render(history, [MCP_TOOL])[1].content == expected


# --------------------------------------------------------------------------- golden: parse


def test_seed_outputs_parse() -> None:
    first, second, final = (react.parse(o) for o in OUTPUTS)
    assert calls(first) == [("get_weather", {"location": "北京"})]
    assert calls(second) == [("get_weather", {"location": "广州"})]
    for step in (first, second):
        assert step.content == "" and step.invalid_tool_calls == []
    assert first.additional_kwargs["reasoning_content"] == (
        "我需要获取北京和广州的天气信息。首先,我将获取北京的天气。"
    )
    assert final.tool_calls == [] and final.invalid_tool_calls == []
    assert final.content == OUTPUTS[2].split("Final Answer: ", 1)[1]
    assert final.additional_kwargs["reasoning_content"] == (
        "我已经获取了北京和广州的天气信息,现在可以回答用户的问题了。"
    )


def test_replay_file_drives_the_weather_loop() -> None:
    """The recorded replies, fed through parse → tools → render, finish in three model calls."""
    replay = json.loads(REPLAY.read_text(encoding="utf-8"))
    assert replay["dialect"] == "react" and replay["outputs"] == OUTPUTS
    assert isinstance(replay["source"], str) and "\n" not in replay["source"]

    history: list[BaseMessage] = [HumanMessage(QUESTION)]
    model_calls = 0
    for output in replay["outputs"]:
        model_input = react.render(history, [LC_TOOL])
        assert model_input[-1].content.startswith(f"Question: {QUESTION}\n\n")
        model_calls += 1
        reply = react.parse(output)
        history.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = LC_TOOL.invoke(call["args"])
            history.append(ToolMessage(result, tool_call_id=call["id"]))
    assert model_calls == 3
    assert "北京的天气温度为23.4°C" in history[-1].content
    # the finished turn renders as question + scratchpad, then the final reply
    rendered = react.render(history, [LC_TOOL])
    assert [type(m) for m in rendered] == [SystemMessage, HumanMessage, AIMessage]
    assert rendered[1].content.count("Observation: ") == 2
    assert rendered[2].content == OUTPUTS[2]


# --------------------------------------------------------------------------- parsing


def blob(name: str, args: Any) -> str:
    return json.dumps({"action": name, "action_input": args}, ensure_ascii=False)


def test_several_action_blocks_are_several_calls() -> None:
    text = (
        "Thought: 两个城市都要查。\n"
        f"Action:\n```json\n{blob('get_weather', {'location': '北京'})}\n```\n"
        f"Action:\n```\n{blob('get_weather', {'location': '广州'})}\n```"
    )
    reply = react.parse(text)
    assert calls(reply) == [
        ("get_weather", {"location": "北京"}),
        ("get_weather", {"location": "广州"}),
    ]
    assert len({c["id"] for c in reply.tool_calls}) == 2
    assert reply.content == ""


def test_a_list_of_blobs_is_several_calls() -> None:
    text = f"Action:\n```\n[{blob('a', {})}, {blob('b', {'x': 1})}]\n```"
    assert calls(react.parse(text)) == [("a", {}), ("b", {"x": 1})]


@pytest.mark.parametrize(
    "text",
    [
        'Action:\n```json\n{"action": "get_weather", "action_input": {"location": "北京"}}\n```',
        'Action:\n```\n{"action": "get_weather", "action_input": {"location": "北京"}}\n```',
        'Action: {"action": "get_weather", "action_input": {"location": "北京"}}',
        'Action:\n{"action": "get_weather",\n "action_input": {"location": "北京"}}\n',
        'Action:```json{"action": "get_weather", "action_input": {"location": "北京"}}```',
        'Action:\n```JSON\n{"action": "get_weather", "action_input": "{\\"location\\": \\"北京\\"}"}\n```',
        'Action: get_weather\nAction Input: {"location": "北京"}',
    ],
    ids=[
        "json-fence",
        "fence",
        "bare",
        "bare-multiline",
        "one-line",
        "input-as-json-string",
        "classic",
    ],
)
def test_blob_forms(text: str) -> None:
    reply = react.parse(text)
    assert calls(reply) == [("get_weather", {"location": "北京"})]
    assert reply.invalid_tool_calls == [] and reply.content == ""


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (
            "Action:\n```\n{'action': 'get_weather', 'action_input': {'location': '北京'}}\n```",
            {"location": "北京"},
        ),
        (
            'Action:\n```\n{"action": "get_weather", "action_input": {"location": "北京",},}\n```',
            {"location": "北京"},
        ),
        (
            'Action:\n```\n{"action": "get_weather", "action_input": {"ok": True, "n": None}}\n```',
            {"ok": True, "n": None},
        ),
        # closed by the next marker, one brace short
        (
            'Action: {"action": "get_weather", "action_input": {"location": "北京"}\nThought: done',
            {"location": "北京"},
        ),
    ],
    ids=["single-quotes", "trailing-commas", "python-literals", "missing-brace"],
)
def test_broken_json_is_repaired(text: str, args: dict[str, Any]) -> None:
    reply = react.parse(text)
    assert calls(reply) == [("get_weather", args)], reply


def test_reply_cut_inside_the_blob_is_not_run() -> None:
    reply = react.parse(
        'Thought: x\nAction:\n```\n{"action": "write", "action_input": {"sql": "DELETE FROM t WHERE'
    )
    assert reply.tool_calls == []
    [bad] = reply.invalid_tool_calls
    assert "ended inside" in bad["error"] and "DELETE" in bad["args"]


@pytest.mark.parametrize(
    ("action_input", "args"),
    [
        ({"location": "北京"}, {"location": "北京"}),
        ('{"location": "北京"}', {"location": "北京"}),
        ("北京", {"input": "北京"}),
        (42, {"input": 42}),
        (["a", "b"], {"input": ["a", "b"]}),
        ("", {}),
        (None, {}),
        ({}, {}),
    ],
    ids=["object", "json-string", "bare-string", "number", "list", "empty-string", "null", "empty"],
)
def test_action_input_forms(action_input: Any, args: dict[str, Any]) -> None:
    reply = react.parse(f"Action:\n```\n{blob('get_weather', action_input)}\n```")
    assert calls(reply) == [("get_weather", args)]


def test_final_answer_blob_is_the_answer() -> None:
    text = (
        f"Thought: 我知道了。\nAction:\n```json\n{blob('Final Answer', '北京晴,广州多云。')}\n```"
    )
    reply = react.parse(text)
    assert reply.tool_calls == [] and reply.invalid_tool_calls == []
    assert reply.content == "北京晴,广州多云。"
    assert reply.additional_kwargs["reasoning_content"] == "我知道了。"


def test_final_answer_marker() -> None:
    reply = react.parse("Thought: I now know the final answer\nFinal Answer: It is sunny.\nBye.")
    assert reply.content == "It is sunny.\nBye."
    assert reply.additional_kwargs["reasoning_content"] == "I now know the final answer"
    assert reply.tool_calls == []


def test_plain_reply_is_the_answer() -> None:
    reply = react.parse("北京今天晴,最高 23 度。")
    assert reply.content == "北京今天晴,最高 23 度。"
    assert reply.tool_calls == [] and reply.invalid_tool_calls == []
    assert "reasoning_content" not in reply.additional_kwargs


def test_prose_after_the_blob_is_content() -> None:
    text = f"Action:\n```\n{blob('get_weather', {'location': '北京'})}\n```\nI will wait for the result."
    reply = react.parse(text)
    assert calls(reply) == [("get_weather", {"location": "北京"})]
    assert reply.content == "I will wait for the result."


def test_invented_observation_is_dropped_with_what_follows() -> None:
    """A model that ignores the stop sequence: its made-up result and answer are not kept."""
    text = (
        f"Thought: 查北京。\nAction:\n```\n{blob('get_weather', {'location': '北京'})}\n```\n"
        "Observation: 北京晴,30 度\nThought: 再查广州。\n"
        f"Action:\n```\n{blob('get_weather', {'location': '广州'})}\n```\n"
        "Observation: 广州雨\nFinal Answer: 北京晴,广州雨。"
    )
    reply = react.parse(text)
    assert calls(reply) == [("get_weather", {"location": "北京"})]
    assert reply.content == ""
    assert "晴" not in reply.additional_kwargs["reasoning_content"]


def test_stop_sequence_cut_short_leaves_no_trace() -> None:
    for tail in ("\nObservation", "\nObs", "\nO", " Observ"):
        reply = react.parse(OUTPUTS[0] + tail)
        assert calls(reply) == [("get_weather", {"location": "北京"})], tail
        assert reply.content == "" and reply.invalid_tool_calls == [], tail


@pytest.mark.parametrize(
    "text",
    [
        "Action:",
        "Action: I will now look up the weather",
        "Action:\n```\n```",
        "Action:\n```\nnot json at all\n```",
        'Action:\n```\n{"action_input": {"location": "北京"}}\n```',
        'Action:\n```\n{"action": 42, "action_input": {}}\n```',
        "Action:\n```\n[]\n```",
        'Action:\n```\n"just a string"\n```',
        'Action:\n```\n{"action": "get_weather", "action_input": "{\\"location\\": "}\n```',
    ],
)
def test_garbage_is_an_invalid_call_with_a_readable_error(text: str) -> None:
    reply = react.parse(text)
    assert reply.tool_calls == [] and reply.content == ""
    [bad] = reply.invalid_tool_calls
    assert bad["error"].startswith("Action:") and bad["id"]


@pytest.mark.parametrize("chunk_size", [1, 4, None])
def test_an_action_with_nothing_after_it_stays_unreadable_when_streamed(chunk_size) -> None:
    # an unreadable call's chunk with empty arguments would add up to a runnable call
    # named "" with {} (LangChain reads empty chunk arguments as {})
    text = "Thought: I will look it up.\n\nAction:\n"
    model = with_dialect(ReplayChatModel([text, text], chunk_size=chunk_size), "react")
    bound = model.bind_tools([LC_TOOL])
    invoked = bound.invoke("weather?")
    streamed = restore_read_reply(reduce(lambda a, b: a + b, bound.stream("weather?")))
    for reply in (invoked, streamed):
        assert reply.tool_calls == []
        [bad] = reply.invalid_tool_calls
        assert bad["args"] == "" and bad["error"].startswith("Action:")


def test_parser_never_raises_on_mutated_outputs() -> None:
    rng = random.Random(4)
    alphabet = [
        *list('{}[]":,`\n '),
        "Action:",
        "Thought:",
        "Observation:",
        "Final Answer:",
        "<think>",
        "</think>",
    ]
    for _ in range(400):
        text = list(rng.choice([*OUTPUTS, SEED["logged_output_2"]]))
        for _ in range(rng.randint(1, 8)):
            at = rng.randint(0, len(text))
            op = rng.random()
            if op < 0.4 and text:
                del text[min(at, len(text) - 1)]
            elif op < 0.8:
                text.insert(at, rng.choice(alphabet))
            else:
                text = text[:at]
        out = "".join(text)
        assert isinstance(react.parse(out), AIMessage)
        _, whole = stream_events(out, [out])  # the markup scanner, whatever the chunking
        chunks = [out[i : i + 3] for i in range(0, len(out), 3)]
        _, streamed = stream_events(out, chunks or [""])
        assert streamed.content == whole.content
        assert calls(streamed) == calls(whole)


# --------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("output", [*OUTPUTS, SEED["logged_output_2"]])
def test_streaming_one_character_at_a_time_matches_parse(output: str) -> None:
    whole = react.parse(output)
    events, streamed = stream_events(output, list(output))
    assert streamed.content == whole.content
    assert streamed.additional_kwargs == whole.additional_kwargs
    assert calls(streamed) == calls(whole)
    assert [e.call["args"] for e in events if isinstance(e, CallEvent)] == [
        a for _, a in calls(whole)
    ]


def test_observation_split_across_chunks_never_reaches_content() -> None:
    text = "Here is the plan.\nObservation: 北京晴\nFinal Answer: made up"
    for cut in range(1, len(text)):
        for split in (text.index("Obs") + 1, text.index("vation") + 2, text.index(":") + 1):
            chunks = (
                [text[:cut], text[cut:split], text[split:]]
                if cut < split
                else [text[:cut], text[cut:]]
            )
            events, message = stream_events(text, chunks)
            deltas = [e.text for e in events if isinstance(e, ContentDelta)]
            assert all("Obs" not in d and "made up" not in d for d in deltas), chunks
            assert message.content == "Here is the plan."


def test_reasoning_stays_apart_from_content() -> None:
    text = (
        "<think>用户问北京。</think>Thought: 查一下。\n"
        f"Action:\n```\n{blob('get_weather', {'location': '北京'})}\n```"
    )
    events, message = stream_events(text, [text[i : i + 5] for i in range(0, len(text), 5)])
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert "用户问北京。" in reasoning and "查一下。" in reasoning
    assert not any(isinstance(e, ContentDelta) for e in events)
    assert message.content == ""
    assert message.additional_kwargs["reasoning_content"] == reasoning
    assert not any(isinstance(e, InvalidCallEvent) for e in events)


# --------------------------------------------------------------------------- write and render


def test_write_assistant_forms() -> None:
    two = AIMessage(
        content="",
        additional_kwargs={"reasoning_content": "两个都查"},
        tool_calls=[
            {"name": "get_weather", "args": {"location": "北京"}, "id": "a", "type": "tool_call"},
            {"name": "get_weather", "args": {"location": "广州"}, "id": "b", "type": "tool_call"},
        ],
    )
    written = react.write_assistant(two)
    assert written.startswith('Thought: 两个都查\n\nAction:\n```\n{\n  "action": "get_weather"')
    assert written.count("Action:\n```") == 2
    assert calls(react.parse(written)) == calls(two)

    final = AIMessage(content="晴。", additional_kwargs={"reasoning_content": "知道了"})
    assert react.write_assistant(final) == "Thought: 知道了\n\nFinal Answer: 晴。"
    assert react.write_assistant(AIMessage(content="晴。")) == "Final Answer: 晴。"
    assert react.parse(react.write_assistant(final)).content == "晴。"


def test_markers_inside_arguments_survive_the_round_trip() -> None:
    args = {"note": "Observation: x\nAction: y\n```json\nThought: z Final Answer: w</think><think>"}
    message = AIMessage(
        content="", tool_calls=[{"name": "save", "args": args, "id": "c1", "type": "tool_call"}]
    )
    written = react.write_assistant(message)
    assert "Observation:" not in written and "```json" not in written
    assert calls(react.parse(written)) == [("save", args)]


def test_invalid_call_is_written_back_as_the_model_wrote_it() -> None:
    reply = react.parse("Thought: try\nAction:\n```\nnot json at all\n```")
    written = react.write_assistant(reply)
    assert written == "Thought: try\n\nAction:\n```\nnot json at all\n```"
    [bad] = reply.invalid_tool_calls
    history = [
        HumanMessage("q"),
        reply,
        ToolMessage(f"Error: {bad['error']}", tool_call_id=bad["id"]),
    ]
    user = react.render(history, [MCP_TOOL])[1].content
    # the error names the Action it could not read; written back broken, it reads the same
    observed = react.neutralise(f"Error: {bad['error']}")
    assert user.endswith(f"{written}\nObservation: {observed}\n")


def test_several_results_follow_their_calls_in_call_order() -> None:
    message = AIMessage(
        content="",
        tool_calls=[
            {"name": "get_weather", "args": {"location": "北京"}, "id": "a", "type": "tool_call"},
            {"name": "get_weather", "args": {"location": "广州"}, "id": "b", "type": "tool_call"},
        ],
    )
    history = [
        HumanMessage(QUESTION),
        message,
        ToolMessage("广州雨", tool_call_id="b"),  # finished first
        ToolMessage("北京晴", tool_call_id="a"),
    ]
    user = react.render(history, [MCP_TOOL])[1].content
    assert user == (
        f"Question: {QUESTION}\n\n{react.write_assistant(message)}"
        "\nObservation: 北京晴\nObservation: 广州雨\n"
    )


def test_multi_turn_history() -> None:
    """Earlier turns keep their question, scratchpad and final reply; the last is a scratchpad."""
    call = AIMessage(
        content="",
        additional_kwargs={"reasoning_content": "查北京"},
        tool_calls=[
            {"name": "get_weather", "args": {"location": "北京"}, "id": "a", "type": "tool_call"}
        ],
    )
    history = [
        SystemMessage("你是天气助手。"),
        HumanMessage("北京天气怎么样"),
        call,
        ToolMessage("北京晴", tool_call_id="a"),
        AIMessage("北京晴。", additional_kwargs={"reasoning_content": "知道了"}),
        HumanMessage("那湿度呢?"),
    ]
    rendered = react.render(history, [MCP_TOOL])
    assert [type(m) for m in rendered] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert rendered[0].content == "你是天气助手。\n" + react.system_prompt([MCP_TOOL])
    assert rendered[0].content.startswith("你是天气助手。\n\nAnswer the following questions")
    assert rendered[1].content == (
        f"Question: 北京天气怎么样\n\n{react.write_assistant(call)}\nObservation: 北京晴\n"
    )
    assert rendered[2].content == "Thought: 知道了\n\nFinal Answer: 北京晴。"
    assert rendered[3].content == "Question: 那湿度呢?\n\n"


def test_non_ascii_tool_descriptions_stay_readable() -> None:
    tool = {
        "name": "get_weather",
        "description": "获取指定城市的天气信息",
        "inputSchema": {"type": "object"},
    }
    prompt = react.system_prompt([tool])
    assert '"description": "获取指定城市的天气信息"' in prompt
    assert 'The only values that should be in the "action" field are: get_weather\n' in prompt


# -- leniency where LangChain's own ReAct parsers accept


def _weather_tool():
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"{city}: 晴"

    return get_weather


def test_a_fenced_action_blob_without_action_line_is_a_call():
    from fncall_graph.adapters import get_dialect

    react = get_dialect("react")
    tools = [_weather_tool()]
    for reply in (
        '```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
        'Thought: I should look it up.\n```json\n{"action": "get_weather", '
        '"action_input": {"city": "Paris"}}\n```',
    ):
        message = react.fit_to_tools(react.parse(reply), tools)
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [
            ("get_weather", {"city": "Paris"})
        ], reply
        assert "```" not in str(message.content)
    # a fence of other JSON stays an answer
    data = react.fit_to_tools(react.parse('Final Answer: ```json\n{"rows": 3}\n```'), tools)
    assert data.tool_calls == [] and "rows" in str(data.content)


def test_a_bare_action_input_goes_to_the_one_required_parameter():
    from fncall_graph.adapters import get_dialect

    react = get_dialect("react")
    tools = [_weather_tool()]
    for reply in (
        'Action: {"action": "get_weather", "action_input": "Paris"}',
        "Action: get_weather\nAction Input: Paris",
        'Action: get_weather\nAction Input: "Paris"',
        'I will check.\nAction: ```json\n{"action": "get_weather", "action_input": "Paris"}\n```',
    ):
        message = react.fit_to_tools(react.parse(reply), tools)
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [
            ("get_weather", {"city": "Paris"})
        ], reply


def test_a_bare_action_input_reaches_the_tool_through_the_graph():
    from fncall_graph import create_fncall_graph
    from fncall_graph.testing import ReplayChatModel

    model = ReplayChatModel(["Thought: look it up\nAction: get_weather\nAction Input: 上海", "晴"])
    graph = create_fncall_graph(model, [_weather_tool()], dialect="react")
    messages = graph.invoke({"messages": [("user", "上海天气?")]})["messages"]
    assert messages[1].tool_calls[0]["args"] == {"city": "上海"}
    assert messages[2].content == "上海: 晴"


# -- every shape LangChain's ReAct and JSON-agent parsers read, on every path
# (the kinds of cases of LangChain's react_single_input, react_json_single_input, json
# and structured-chat parser tests, written here)

_BLOB = '{\n  "action": "get_weather",\n  "action_input": "Lyon"\n}'
LANGCHAIN_SHAPES: dict[str, tuple[str, Any]] = {
    # ReActJsonSingleInputOutputParser: a thought, then a fenced blob, no "Action:" label
    "thought, fenced blob": (f"Thought: the user wants Lyon\n```\n{_BLOB}\n```\n", "Lyon"),
    "thought, fenced json blob": (f"Thought: look it up\n```json\n{_BLOB}\n```", "Lyon"),
    # JSONAgentOutputParser: a reply that is the fenced blob, indented, or bare JSON
    "indented fence": (f"   ```\n{_BLOB}\n```", "Lyon"),
    "bare blob": ('{"action": "get_weather", "action_input": {"city": "Lyon"}}', "Lyon"),
    "final answer blob": (
        '```\n{\n  "action": "Final Answer",\n  "action_input": "Sunny in Lyon"\n}\n```',
        None,
    ),
    # ReActSingleInputOutputParser / MRKL: the classic form, numbered or not
    "classic": ("Thought: check\nAction: get_weather\nAction Input: Lyon", "Lyon"),
    "classic, quoted input": ('Action: get_weather\nAction Input: "Lyon"', "Lyon"),
    "numbered": ("Thought: check\nAction 1: get_weather\nAction 1 Input: Lyon", "Lyon"),
    "prose then Action:": (f"I can use get_weather.\n\nAction:\n```json\n{_BLOB}\n```", "Lyon"),
    "final answer": ("Thought: done\nFinal Answer: Sunny in Lyon", None),
}


def _every_path(text: str, tools: list[Any]) -> dict[str, AIMessage]:
    model = with_dialect(ReplayChatModel([text, text], chunk_size=4), "react")
    invoked = model.bind_tools(tools).invoke("Weather in Lyon?")
    chunks = list(model.bind_tools(tools).stream("Weather in Lyon?"))
    streamed = restore_read_reply(reduce(lambda a, b: a + b, chunks))
    assert isinstance(streamed, AIMessage)
    return {
        "parse": react.fit_to_tools(react.parse(text), tools),
        "normalize": normalize(AIMessage(text), "react", tools=tools),
        "invoke": invoked,
        "stream": streamed,
    }


@pytest.mark.parametrize("shape", list(LANGCHAIN_SHAPES))
def test_every_shape_langchains_react_parsers_read_is_read_on_every_path(shape: str) -> None:
    text, city = LANGCHAIN_SHAPES[shape]
    for path, message in _every_path(text, [_weather_tool()]).items():
        if city is None:  # an answer, no call
            assert message.tool_calls == [], (path, message)
            assert text_of(message.content) == "Sunny in Lyon", (path, message)
        else:
            assert [(c["name"], c["args"]) for c in message.tool_calls] == [
                ("get_weather", {"city": city})
            ], (path, message)
            assert "```" not in text_of(message.content) and "action" not in text_of(
                message.content
            ), (path, message)


@pytest.mark.parametrize(
    "text",
    [
        # shown, not made: after an example cue, in the middle of the reply, inline
        f"For example:\n```json\n{_BLOB}\n```",
        f"```json\n{_BLOB}\n```\nThat is the format; I will not call it now.",
        'Write `{"action": "get_weather", "action_input": "Lyon"}` to call it.',
        # JSON that is not an action stays the answer
        '```json\n{"city": "Lyon", "temp": 21}\n```',
        "Thought: e.g.\nAction 1: get_weather\nAction 1 Input: Lyon",
    ],
)
def test_an_action_only_shown_stays_text_on_every_path(text: str) -> None:
    for path, message in _every_path(text, [_weather_tool()]).items():
        assert message.tool_calls == [], (path, message)
