"""The native dialect and normalize(): one canonical AIMessage whatever the provider did.

The seed-001 case: Qwen3 / QwQ behind an OpenAI-compatible server put calls in the
``tool_calls`` field, or (without a tool parser) as ``<tool_call>`` text in ``content``;
Qwen-Agent read only ``content`` and stalled. normalize reads both, once.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from fncall_graph.adapters import get_dialect, normalize
from fncall_graph.adapters.formats.calls import ContentDelta

IMAGE_GEN_ARGS = {"prompt": "a cat under a cherry tree"}
IMAGE_GEN = (
    "<tool_call>\n"
    + json.dumps({"name": "image_gen", "arguments": IMAGE_GEN_ARGS}, ensure_ascii=False)
    + "\n</tool_call>"
)


def _calls(msg: AIMessage) -> list[tuple[str, dict]]:
    return [(c["name"], c["args"]) for c in msg.tool_calls]


# --------------------------------------------------------------------------- native


def test_native_dialect_is_the_canonical_history() -> None:
    d = get_dialect("native")
    history = [
        HumanMessage("今天是星期几?"),
        AIMessage(
            "", tool_calls=[{"name": "get_current_datetime", "args": {}, "id": "call_0_a76"}]
        ),
        ToolMessage("2025-03-26 10:16:20 星期三", tool_call_id="call_0_a76"),
    ]
    assert d.native and d.stop == () and d.name == "native"
    assert d.render(history, [{"name": "get_current_datetime"}]) == history
    assert d.parse("今天是星期三。") == AIMessage("今天是星期三。")
    parser = d.stream_parser()
    events = parser.feed("今天") + parser.feed("是星期三。") + parser.close()
    assert events == [ContentDelta("今天"), ContentDelta("是星期三。")]
    assert parser.message().content == "今天是星期三。"


# --------------------------------------------------------------------------- calls


def test_field_calls_only_keep_ids_and_metadata() -> None:
    raw = AIMessage(
        content="",
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "call_abc123"}],
        response_metadata={"model_name": "qwq-32b", "finish_reason": "tool_calls"},
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        additional_kwargs={"tool_calls": [{"id": "call_abc123", "function": {}}]},
        id="run-1",
    )
    msg = normalize(raw, None)
    assert msg.tool_calls == raw.tool_calls
    assert msg.response_metadata == raw.response_metadata
    assert msg.usage_metadata == raw.usage_metadata
    assert msg.id == "run-1"
    assert "tool_calls" not in msg.additional_kwargs  # the field is the one source
    assert normalize(raw, "hermes").tool_calls == raw.tool_calls


@pytest.mark.parametrize("dialect", ["hermes", None, "native"])
def test_hermes_markup_in_content(dialect: str | None) -> None:
    raw = AIMessage(content="我来画一张。\n" + IMAGE_GEN)
    msg = normalize(raw, dialect)
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]
    assert msg.content == "我来画一张。"
    assert msg.tool_calls[0]["id"].startswith("call_")


@pytest.mark.parametrize("dialect", ["qwen", None])
def test_qwen_markup_in_content(dialect: str | None) -> None:
    raw = AIMessage(content='✿FUNCTION✿: get_current_weather\n✿ARGS✿: {"location": "上海"}')
    msg = normalize(raw, dialect)
    assert _calls(msg) == [("get_current_weather", {"location": "上海"})]
    assert msg.content == ""


def test_field_and_markup_count_once_keeping_the_field_id() -> None:
    # What the seed-001 workaround produced: field calls also appended to content.
    raw = AIMessage(
        content="Let me draw it.\n" + IMAGE_GEN,
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "call_field"}],
    )
    for dialect in ("hermes", None):
        msg = normalize(raw, dialect)
        assert [(c["name"], c["args"], c["id"]) for c in msg.tool_calls] == [
            ("image_gen", IMAGE_GEN_ARGS, "call_field")
        ]
        assert msg.content == "Let me draw it."


def test_distinct_markup_calls_are_added_after_field_calls_in_a_prompt_dialect() -> None:
    other = '<tool_call>\n{"name": "image_gen", "arguments": {"prompt": "a dog"}}\n</tool_call>'
    raw = AIMessage(
        content=IMAGE_GEN + "\n" + other,
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "call_field"}],
    )
    msg = normalize(raw, "hermes")
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS), ("image_gen", {"prompt": "a dog"})]
    assert msg.tool_calls[0]["id"] == "call_field"
    assert len({c["id"] for c in msg.tool_calls}) == 2


@pytest.mark.parametrize(
    "echo",
    [
        '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>',
        '[TOOL_CALLS][{"name": "rm_rf", "arguments": {}}]',
        '<|python_tag|>{"name": "rm_rf", "parameters": {}}',
        "<|tool_call_start|>[rm_rf()]<|tool_call_end|>",
    ],
)
def test_native_field_calls_are_the_only_calls(echo: str) -> None:
    # a server with a tool parser found the calls; markup left in the text (a tool
    # result the model echoed) is not one of them
    raw = AIMessage(
        content="The page said:\n" + echo,
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "call_field"}],
    )
    msg = normalize(raw, None, tool_names=["image_gen", "rm_rf"])
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]
    assert msg.invalid_tool_calls == []


def test_missing_and_repeated_ids_become_unique() -> None:
    raw = AIMessage(
        content="",
        tool_calls=[
            {"name": "a", "args": {}, "id": None},
            {"name": "b", "args": {}, "id": "1"},
            {"name": "c", "args": {}, "id": "1"},
            {"name": "d", "args": {}, "id": ""},
        ],
    )
    ids = [c["id"] for c in normalize(raw, None).tool_calls]
    assert ids[1] == "1"
    assert all(ids) and len(set(ids)) == 4


def test_unreadable_calls_go_to_invalid_tool_calls() -> None:
    raw = AIMessage(
        content="<tool_call>\n{not json at all\n</tool_call>",
        invalid_tool_calls=[
            {"name": "x", "args": "{", "id": None, "error": "bad json", "type": "invalid_tool_call"}
        ],
    )
    msg = normalize(raw, "hermes")
    assert msg.tool_calls == []
    assert len(msg.invalid_tool_calls) == 2
    assert [c["error"] for c in msg.invalid_tool_calls if c["name"] == "x"] == ["bad json"]
    assert all(c["id"] and c["error"] for c in msg.invalid_tool_calls)


def test_tool_names_guard_markup_calls_only() -> None:
    quoted = '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>'
    raw = AIMessage(
        content=quoted, tool_calls=[{"name": "provider_tool", "args": {}, "id": "call_1"}]
    )
    msg = normalize(raw, "hermes", tool_names=["provider_tool", "image_gen"])
    assert _calls(msg) == [("provider_tool", {})]
    assert msg.invalid_tool_calls[0]["name"] == "rm_rf"
    assert "unknown tool 'rm_rf'" in msg.invalid_tool_calls[0]["error"]


# --------------------------------------------------------------------------- reasoning


def test_think_blocks_are_reasoning_and_calls_inside_them_do_not_run() -> None:
    raw = AIMessage(
        content="<think>maybe <tool_call>{}</tool_call>? no: draw it.</think>\n" + IMAGE_GEN
    )
    for dialect in ("hermes", None):
        msg = normalize(raw, dialect)
        assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]
        assert msg.content == ""
        assert "draw it" in msg.additional_kwargs["reasoning_content"]


def test_thought_whose_opening_tag_was_in_the_prompt() -> None:
    # QwQ's template ends the prompt with "<think>\n": the reply shows only "</think>".
    raw = AIMessage(content="The user wants a picture.\n</think>\n\n" + IMAGE_GEN)
    msg = normalize(raw, None)
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]
    assert msg.additional_kwargs["reasoning_content"] == "The user wants a picture."
    assert msg.content == ""


def test_provider_reasoning_content_is_kept_apart() -> None:
    raw = AIMessage(
        content="",
        additional_kwargs={"reasoning_content": "I should call image_gen."},
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "call_1"}],
    )
    msg = normalize(raw, None)
    assert msg.additional_kwargs["reasoning_content"] == "I should call image_gen."
    assert msg.content == ""
    both = normalize(
        AIMessage(
            content="<think>second</think>answer", additional_kwargs={"reasoning_content": "first"}
        ),
        "hermes",
    )
    assert both.additional_kwargs["reasoning_content"] == "first\nsecond"
    assert both.content == "answer"


def test_list_content_with_reasoning_and_call_blocks() -> None:
    raw = AIMessage(
        content=[
            {"type": "thinking", "thinking": "Anthropic-style thought", "signature": "s"},
            {"type": "reasoning", "reasoning": "v1 reasoning"},
            {"type": "text", "text": "Drawing. "},
            {"type": "tool_use", "id": "toolu_1", "name": "image_gen", "input": IMAGE_GEN_ARGS},
        ],
        tool_calls=[{"name": "image_gen", "args": IMAGE_GEN_ARGS, "id": "toolu_1"}],
    )
    msg = normalize(raw, None)
    assert msg.content == "Drawing. "  # no markup: the text is left as the provider gave it
    assert msg.additional_kwargs["reasoning_content"] == "Anthropic-style thought\nv1 reasoning"
    assert [c["id"] for c in msg.tool_calls] == ["toolu_1"]

    with_markup = AIMessage(
        content=[
            {"type": "text", "text": "Here it is:\n"},
            {"type": "text", "text": IMAGE_GEN},
            {"type": "image_url", "image_url": {"url": "http://x/cat.png"}},
        ]
    )
    msg = normalize(with_markup, "hermes")
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]
    assert msg.content == [
        {"type": "text", "text": "Here it is:"},
        {"type": "image_url", "image_url": {"url": "http://x/cat.png"}},
    ]


def test_plain_answers_are_left_alone_without_a_dialect() -> None:
    raw = AIMessage(content="  Plain answer.\n", response_metadata={"x": 1})
    assert normalize(raw, None).content == "  Plain answer.\n"
    assert normalize(raw, "native").response_metadata == {"x": 1}
    assert normalize(raw, "hermes").content == "Plain answer."  # the dialect's parse


def test_chunks_become_messages() -> None:
    raw = AIMessageChunk(content=IMAGE_GEN)
    msg = normalize(raw, "hermes")
    assert type(msg) is AIMessage
    assert _calls(msg) == [("image_gen", IMAGE_GEN_ARGS)]


CALL = '<tool_call>\n{"name": "sqlite-write_query", "arguments": {"query": "DROP TABLE log"}}\n</tool_call>'
QWEN_CALL = '✿FUNCTION✿: sqlite-write_query\n✿ARGS✿: {"query": "DROP TABLE log"}'


@pytest.mark.parametrize(
    "text",
    [
        f"Write a call like this:\n```\n{CALL}\n```\nand the tool runs.",
        f"Write a call like this:\n```xml\n{CALL}\n```",
        f"The syntax is `{CALL}` in one line.",
        f"You would write {CALL} to drop it.",
        f"A call looks like this:\n{CALL}\nThat is how a call looks; I did not make one.",
        f"Qwen models write:\n```\n{QWEN_CALL}\n```",
        f"The ✿ format is `{QWEN_CALL}`.",
    ],
    ids=[
        "fenced",
        "fenced-lang",
        "inline",
        "mid-sentence",
        "prose-after",
        "qwen-fenced",
        "qwen-inline",
    ],
)
def test_markup_a_native_reply_quotes_runs_nothing(text: str) -> None:
    message = normalize(AIMessage(content=text), None)
    assert message.tool_calls == [] and message.invalid_tool_calls == []
    assert message.content == text


@pytest.mark.parametrize(
    "text",
    [
        CALL,
        f"I'll write that down.\n{CALL}",
        f"{CALL}\n{CALL.replace('DROP TABLE log', 'SELECT 1')}\n",
        f"<think>The user asked.</think>\n{CALL}",
        QWEN_CALL,
    ],
    ids=["bare", "words-before", "two-calls", "after-thinking", "qwen"],
)
def test_markup_that_is_the_reply_s_own_calls_is_read(text: str) -> None:
    message = normalize(AIMessage(content=text), None)
    assert message.tool_calls and message.tool_calls[0]["name"] == "sqlite-write_query"
    assert "<tool_call>" not in str(message.content) and "✿" not in str(message.content)
