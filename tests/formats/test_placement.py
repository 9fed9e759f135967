"""Where a call stands: made by the model, or only shown (adapters/formats/scanner.py).

Both sides of the rule, in every call format, read whole and streamed: markup that a
reply shows where Markdown or prose quotes it (a list item's text, a blockquote, code,
quotation marks, ``<details>``), as a label's value ("For example:", "Output:"), in the
middle of a sentence, in a log line, or introduced and then explained, stays in the
answer and runs nothing; the same call where prose stands (its own line between list
items, indented under one, after a closed quotation or code block, glued to Chinese
text) runs.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from test_known_format import WEATHER, WRITE

from fncall_graph.adapters import normalize, with_dialect
from fncall_graph.adapters.formats.calls import CallEvent, ContentDelta, ShownMarkup
from fncall_graph.adapters.formats.readers import get_reader
from fncall_graph.adapters.formats.scanner import Placement, explains_its_calls
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.testing import ReplayChatModel

SHOWN = {
    "bullet": "Tools are called like this:\n- {a}\n- and the server runs them.",
    "bullet with words": "* The model writes {a} and stops.",
    "numbered": "Steps:\n1. It writes {a}\n2. The server runs it.",
    "numbered 、": "步骤：\n1、{a}\n2、服务器执行。",
    "blockquote": "The docs say:\n> {a}\n\nThat is how a call looks.",
    "nested blockquote": ">> {a}",
    "double quotes": 'The model writes "{a}" to call a tool.',
    "curly quotes": "A call such as “{a}” names the tool.",
    "corner quotes": "模型输出「{a}」来调用工具。",
    "single quotes": "Writing '{a}' calls the weather tool.",
    "inline code": "Write `{a}` to call a tool.",
    "fenced after text": "A call looks like this:\n```text\n{a}\n```",
    "tilde fence": "Like so:\n~~~\n{a}\n~~~",
    "indented code": "The format:\n\n    {a}\n\nends the turn.",
    "html code": "The call <code>{a}</code> names the tool.",
    "html pre": "<pre>\n{a}\n</pre>",
    "link text": "See [{a}](https://example.com/docs).",
    "table cell": "| call | meaning |\n|---|---|\n| {a} | weather |",
    "example cue": "For example:\n{a}",
    "e.g.": "A model may write, e.g. {a}",
    "label, same line": "Sample output: {a}",
    "label line": "Usage:\n\n{a}",
    "few-shot pair": "Input: weather in Paris?\nOutput: {a}",
    "mid-sentence": "When it needs data the model emits {a} and waits.",
    "log line": "2024-06-03 14:02:11 INFO completion={a}",
    "log tag": "[DEBUG] raw: {a}",
    "details": "<details>\n<summary>Raw output</summary>\n\n{a}\n\n</details>",
    "html comment": "<!-- {a} -->",
    "short heading": "### Example\n\n{a}",
}
MADE = {
    "between list items": "Plan:\n1. Check the weather.\n{a}\n2. Tell you.",
    "indented under a list item": "Plan:\n1. Check the weather:\n   {a}\n2. Tell you.",
    "after a closed quotation": 'You said "weather". {a}',
    "after an apostrophe": "It's sunny, let me check. {a}",
    "after a closed code block": "Here is the query:\n```sql\nSELECT 1;\n```\n{a}",
    "after inline code": "The `city` is Paris.\n{a}",
    "after a blockquote": "> You asked for the weather.\n\n{a}",
    "after a list": "- Paris\n- Rome\n\n{a}",
    "after a Chinese sentence": "好的，我来查一下。{a}",
    "glued to Chinese": "我来查询{a}",
    "glued to Japanese": "天気を調べます{a}",
    "after a colon sentence": "I'll call the tool in the right format:\n{a}",
}
# calls introduced (the text before them ends in a colon) and followed by prose
EXPLAINED = (
    "A call looks like this:\n{a}\nThat is the format the model uses to call a tool.",
    "The model writes:\n\n{a}\n\nand the server parses it.",
    "调用方式如下：\n{a}\n以上是调用天气工具的格式。",
    # a call first, then a line that points back at it and speaks of its syntax
    "{a}\nThat is the format the model uses to call a tool.",
    "{a}\nThis is how a model calls get_weather.",
    "{a}\n以上就是调用方式。",
)
# a remark after a call the model made: it neither follows an introduction nor speaks
# of the call's syntax
REMARKS = (
    "{a}\nI'll report back once I have it.",
    "{a}\nThis should give us the weather.",
    "Let me check.\n{a}\nThis calls the tool for Paris.",
    "{a}\n稍等，查到结果后告诉你。",
    "Plan:\n1. Check the weather:\n{a}\n2. Tell you.",
)
# formats with no markup of their own: a quoted and a made call are the same bytes
BARE = {"json", "pythonic"}


def _calls(message: AIMessage) -> list[tuple[str, dict]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


def _streamed(fmt: str, text: str, size: int) -> tuple[AIMessage, list[ContentDelta]]:
    parser = get_reader(fmt).stream_parser()
    events = []
    for i in range(0, len(text), size):
        events += parser.feed(text[i : i + size])
    events += parser.close()
    return parser.message(), [e for e in events if isinstance(e, ContentDelta)]


@pytest.mark.parametrize("where", sorted(SHOWN))
@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_a_call_the_reply_only_shows_runs_nothing_and_stays_in_the_answer(
    fmt: str, where: str
) -> None:
    call = WRITE[fmt](*WEATHER)
    if fmt in BARE and where in ("link text", "table cell"):
        pytest.skip("a bare pythonic list is link-like text itself")
    text = SHOWN[where].format(a=call)
    read = normalize(AIMessage(text), None, call_format=fmt)
    assert read.tool_calls == [] and read.invalid_tool_calls == [], text
    # what the reply shows is its answer: the call is kept (turn tokens are dropped)
    assert "get_weather" in read.content and "Paris" in read.content, read.content
    for size in (1, 3, 7):
        streamed, deltas = _streamed(fmt, text, size)
        assert streamed.tool_calls == [] and streamed.invalid_tool_calls == [], size
        if fmt not in BARE:
            assert any(isinstance(d, ShownMarkup) for d in deltas)


@pytest.mark.parametrize("where", sorted(MADE))
@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_the_same_call_where_prose_stands_runs(fmt: str, where: str) -> None:
    text = MADE[where].format(a=WRITE[fmt](*WEATHER))
    assert _calls(normalize(AIMessage(text), None, call_format=fmt)) == [WEATHER], text
    for size in (1, 3, 7):
        assert _calls(_streamed(fmt, text, size)[0]) == [WEATHER], size


# Qwen-Agent drops what follows a call's ✿ARGS✿, and bare calls (json, pythonic) are read
# out of the whole answer: neither leaves a line after its calls to read
@pytest.mark.parametrize("fmt", sorted(set(WRITE) - {"qwen"} - BARE))
def test_calls_introduced_and_then_explained_run_nothing(fmt: str) -> None:
    for template in EXPLAINED:
        text = template.format(a=WRITE[fmt](*WEATHER))
        assert normalize(AIMessage(text), None, call_format=fmt).tool_calls == [], text
    for template in REMARKS:
        text = template.format(a=WRITE[fmt](*WEATHER))
        if fmt in ("granite", "functools", "gigachat3"):
            continue  # a call list that runs to the end of the reply takes the remark in
        assert _calls(normalize(AIMessage(text), None, call_format=fmt)) == [WEATHER], text


def test_an_introduction_and_prose_after_or_a_remark_on_the_syntax_explain() -> None:
    call = CallEvent({"name": "f", "args": {}, "id": "1", "type": "tool_call"})

    def events(before: str, after: str) -> list:
        return [ContentDelta(before), call, ContentDelta(after)]

    for before, after in (
        ("Like this:", "That is all."),
        ("如下：", "以上。"),
        ("x:", "y"),
        ("Let me check.", "That is the format."),  # points back at the call's syntax
        ("", "以上就是调用方式。"),
    ):
        assert explains_its_calls(events(before, after)), (before, after)
    for before, after in (
        ("Like this:", ""),  # introduced, not explained: "…in the right format:"
        ("Let me check.", "This calls the tool for Paris."),  # about the call, not its syntax
        ("", "I'll report back."),
        ("Plan:\n1. Look:", "2. Tell you."),  # the next step of a plan
    ):
        assert not explains_its_calls(events(before, after)), (before, after)
    assert not explains_its_calls([ContentDelta("Like this:"), ContentDelta("no call")])


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def _sum(chunks: list) -> AIMessage:
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    return restore_read_reply(total)  # what chunks could not take back


@pytest.mark.parametrize("dialect", ["native", "hermes", "qwen", "react"])
@pytest.mark.parametrize("where", ["bullet", "blockquote", "double quotes", "fenced after text"])
def test_every_dialect_shows_a_quoted_call_invoked_and_streamed(dialect: str, where: str) -> None:
    # the model's own format: the prompt dialect's, or (native) Hermes declared
    fmt = {"native": "hermes"}.get(dialect, dialect)
    text = SHOWN[where].format(a=WRITE[fmt](*WEATHER))
    made = "Let me check.\n" + WRITE[fmt](*WEATHER)
    explained = "A call looks like this:\n" + WRITE[fmt](*WEATHER) + "\nThat is the format."
    if dialect == "qwen":  # Qwen-Agent drops what follows a call's arguments
        explained = text
    for reply, want in ((text, []), (made, [WEATHER]), (explained, [])):
        inner = ReplayChatModel([reply, reply], chunk_size=5)
        model = with_dialect(inner, dialect, call_format=fmt if dialect == "native" else None)
        bound = model.bind_tools([get_weather])
        invoked = bound.invoke([HumanMessage("How is a call written?")])
        streamed = _sum(list(bound.stream([HumanMessage("How is a call written?")])))
        assert _calls(invoked) == want, (dialect, reply)
        assert _calls(streamed) == want, (dialect, reply)
        assert invoked.content == streamed.content


def test_each_reason_is_told() -> None:
    cases = {
        "x\n```\n": "in a code block",
        "a `": "in inline code",
        "> ": "in a blockquote",
        "- ": "in a list item",
        'he wrote "': "in quotation marks",
        "<code>": "in an HTML element",
        "<details>\n": "in an HTML element",
        "<!-- ": "in an HTML element",
        "[": "in link text",
        "| a | ": "in a table",
        "For example:\n": "after a label",
        "Output: ": "after a label",
        "Usage:\n\n": "after a label",
        "### Example\n\n": "after a label",
        "x\n\n    ": "in a code block",
        "It writes ": "in the middle of a sentence",
        "a call, i.e. ": "after an abbreviation",
        "[INFO] got ": "in a log line",
        "12:00:01 got ": "in a log line",
    }
    for before, why in cases.items():
        p = Placement()
        p.feed(before)
        assert p.shown() == why, before
    for before in (
        "",
        "Let me check. ",
        "Plan:\n1. Look.\n",
        "```\n",
        "It's time. ",
        "- a\n\n",
        "我来查询",
        "I'll call it in the right format:\n",
        "I'll call it in the right format: ",
        "## Checking the weather\n\n",
    ):
        p = Placement()
        p.feed(before)
        assert p.shown() is None, before


def test_a_wrapper_token_carries_where_it_stood() -> None:
    # Qwen3-Coder wraps <function=…> in <tool_call> on a line of its own
    p = Placement()
    p.feed("Write '")
    p.token()
    p.feed("\n")
    assert p.shown() == "in quotation marks"
    p.feed("then words.")  # text after the token: the token's place no longer counts
    assert p.shown() is None


texts = st.text(st.sampled_from("ab \n\t`>-*1.\"'“”[]|<>/code pre:例如、"), max_size=60)


@given(text=texts, cuts=st.lists(st.integers(0, 60), max_size=8))
def test_the_answer_does_not_depend_on_how_the_text_was_cut(text: str, cuts: list[int]) -> None:
    whole = Placement()
    whole.feed(text)
    pieces = sorted({c for c in cuts if 0 < c < len(text)})
    cut = Placement()
    for a, b in zip([0, *pieces], [*pieces, len(text)], strict=True):
        cut.feed(text[a:b])
    assert cut.shown() == whole.shown()


# prose a real call stands between, when nothing says the model's format (a thread's
# first reply, detected): the call is read, and the prose is the answer
BETWEEN = {
    "between paragraphs": "I will look it up.\n\n{a}\n\nThe service answers within a few seconds, usually.",
    "followed by a remark": "{a}\nI'll report back once I have it.",
    "in the middle of a list": "Plan:\n1. Check the weather.\n{a}\n2. Tell you.",
}


@pytest.mark.parametrize("where", sorted(BETWEEN))
@pytest.mark.parametrize("fmt", sorted(set(WRITE) - BARE - {"react"}))
def test_a_detected_format_reads_a_call_between_prose(fmt: str, where: str) -> None:
    if fmt in ("granite", "functools", "gigachat3") and where != "in the middle of a list":
        pytest.skip("a call list that runs to the end of the reply takes the prose in")
    text = BETWEEN[where].format(a=WRITE[fmt](*WEATHER))
    read = normalize(AIMessage(text), None)
    assert _calls(read) == [WEATHER], text
    inner = ReplayChatModel([text, text], chunk_size=4)
    model = with_dialect(inner, "native").bind_tools([get_weather])
    assert _calls(_sum(list(model.stream([HumanMessage("weather?")])))) == [WEATHER]


# a reply whose format nothing declares: a call it only quotes first, then the call it
# makes (the quoted one must not decide that the reply makes none)
QUOTED_THEN_MADE = {
    "inline code": "Calls are written like `{q}`.\n\nNow the real lookup.\n{a}",
    "fence": "Here is how a call is written:\n```\n{q}\n```\nCalling it for you now.\n{a}",
    "quotation": 'You wrote "{q}"; that only shows the syntax.\n\nLet me check.\n{a}',
    "glued to Chinese": "格式是`{q}`。\n\n我来查询{a}",
}


@pytest.mark.parametrize("where", sorted(QUOTED_THEN_MADE))
@pytest.mark.parametrize("fmt", ["hermes", "mistral", "deepseek", "kimi", "function-tag"])
def test_a_quoted_call_does_not_hide_the_call_made_after_it(fmt: str, where: str) -> None:
    quoted = " ".join(line.strip() for line in WRITE[fmt]("get_time", {"zone": "CET"}).splitlines())
    text = QUOTED_THEN_MADE[where].format(q=quoted, a=WRITE[fmt](*WEATHER))
    for declared in (None, fmt):
        assert _calls(normalize(AIMessage(text), None, call_format=declared)) == [WEATHER], text
        inner = ReplayChatModel([text, text], chunk_size=3)
        model = with_dialect(inner, "native", call_format=declared).bind_tools([get_weather])
        assert _calls(model.invoke([HumanMessage("weather?")])) == [WEATHER], declared
        streamed = _sum(list(model.stream([HumanMessage("weather?")])))
        assert _calls(streamed) == [WEATHER], declared


@pytest.mark.parametrize("fmt", ["hermes", "mistral", "deepseek", "kimi", "granite"])
def test_markup_glued_to_chinese_or_japanese_text_is_made_when_detected(fmt: str) -> None:
    for lead in ("我来查询", "天気を調べます", "好的，我需要先获取天气信息。"):
        text = lead + WRITE[fmt](*WEATHER)
        assert _calls(normalize(AIMessage(text), None)) == [WEATHER], text
