"""A reply whose call format is known is read the way that format's engine reads it.

An inference server is told the model's format (vLLM's ``--tool-call-parser``, llama.cpp's
chat format, Ollama's parser) and reads only that format, anywhere in the reply, with the
engine's repairs. ``normalize(..., call_format=...)``, ``get_reader(name)`` and
``with_dialect(..., call_format=...)`` do the same.

The calls below are written from the formats' public descriptions (the models' chat
templates, the servers' parser tests), not from the readers' own examples.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import reduce

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool

from fncall_graph.adapters import normalize, with_dialect
from fncall_graph.adapters.formats.readers import CALL_FORMATS, READERS, get_reader
from fncall_graph.adapters.models.call_format import check_call_format, format_of_name
from fncall_graph.testing import ReplayChatModel

WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET"})
TOOLS = [
    {
        "name": name,
        "description": name,
        "parameters": {"type": "object", "properties": {key: {"type": "string"}}},
    }
    for name, key in (("get_weather", "city"), ("get_time", "zone"))
]


@tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    return "Sunny."


def _j(name: str, args: dict, key: str = "arguments") -> str:
    return json.dumps({"name": name, key: args}, ensure_ascii=False)


def _kv(args: dict, quote: str) -> str:
    return ",".join(f"{k}:{quote}{v}{quote}" for k, v in args.items())


G4_QUOTE = '<|"|>'

# One call, as each format's template writes it (a whole block, so that two calls are two
# blocks). The comment names where the shape is described.
Writer = Callable[[str, dict], str]
WRITE: dict[str, Writer] = {
    # Qwen2.5 / Hermes 2 Pro chat templates
    "hermes": lambda n, a: f"<tool_call>\n{_j(n, a)}\n</tool_call>",
    # Qwen-Agent's FN_CALL_TEMPLATE
    "qwen": lambda n, a: f"✿FUNCTION✿: {n}\n✿ARGS✿: {json.dumps(a)}\n",
    # LangChain's JSON-blob ReAct prompt
    "react": lambda n, a: f"Action:\n```\n{json.dumps({'action': n, 'action_input': a})}\n```\n",
    # Llama 3.1 JSON tool calling (custom tool call prompt)
    "json": lambda n, a: _j(n, a, "parameters"),
    # Llama 3.2 pythonic tool calling
    "pythonic": lambda n, a: "[" + n + "(" + ", ".join(f'{k}="{v}"' for k, v in a.items()) + ")]",
    # Llama 3.1's <function=...> custom format
    "function-tag": lambda n, a: f"<function={n}>{json.dumps(a)}</function>",
    # Seed-OSS chat template
    "seed-oss": lambda n, a: (
        f"<seed:tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in a.items())
        + "</function>\n</seed:tool_call>"
    ),
    # MiniMax-M2 chat template
    "minimax": lambda n, a: (
        f'<minimax:tool_call>\n<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n</minimax:tool_call>"
    ),
    # Step-3 chat template
    "step3": lambda n, a: (
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        f'<steptml:invoke name="{n}">'
        + "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in a.items())
        + "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>"
    ),
    # Jamba 1.5 chat template
    "tool-calls-tag": lambda n, a: f"<tool_calls>[{_j(n, a)}]</tool_calls>",
    # Hunyuan (Hy3) with the tokenizer's labelled markers
    "hunyuan-labelled": lambda n, a: (
        f"<tool_calls:opensource><tool_call:opensource>{n}<tool_sep:opensource>"
        + "".join(
            f"<arg_key:opensource>{k}</arg_key:opensource>"
            f"<arg_value:opensource>{v}</arg_value:opensource>"
            for k, v in a.items()
        )
        + "</tool_call:opensource></tool_calls:opensource>"
    ),
    # Granite 3.x chat template
    "granite": lambda n, a: f"<|tool_call|>[{_j(n, a)}]",
    # granite-20b-functioncalling
    "granite-fc": lambda n, a: f"<function_call> {_j(n, a)}",
    # Phi-4-mini / FireFunction v2
    "functools": lambda n, a: f"functools[{_j(n, a)}]",
    # InternLM2 chat template
    "internlm": lambda n, a: f"<|action_start|><|plugin|>\n{_j(n, a, 'parameters')}<|action_end|>",
    # Command R7B chat template
    "command-r": lambda n, a: (
        "<|START_ACTION|>"
        + json.dumps([{"tool_call_id": "0", "tool_name": n, "parameters": a}])
        + "<|END_ACTION|>"
    ),
    # Llama 3.1 built-in tool calling
    "llama-python-tag": lambda n, a: f"<|python_tag|>{_j(n, a, 'parameters')}<|eom_id|>",
    # LFM2 chat template
    "lfm2": lambda n, a: (
        "<|tool_call_start|>["
        + n
        + "("
        + ", ".join(f'{k}="{v}"' for k, v in a.items())
        + ")]<|tool_call_end|>"
    ),
    # Apertus chat template
    "apertus": lambda n, a: "<|tools_prefix|>" + json.dumps([{n: a}]) + "<|tools_suffix|>",
    # Nemotron Nano v2 chat template
    "nemotron": lambda n, a: f"<TOOLCALL>[{_j(n, a)}]</TOOLCALL>",
    # LongCat-Flash chat template
    "longcat": lambda n, a: f"<longcat_tool_call>\n{_j(n, a)}\n</longcat_tool_call>",
    # GigaChat 3 chat template
    "gigachat3": lambda n, a: f"function call<|role_sep|>\n{_j(n, a)}",
    # Mistral v11+ tokenizer (Mistral Small 3.2, Devstral)
    "mistral": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{json.dumps(a)}",
    # DeepSeek-V3.1 chat template
    "deepseek": lambda n, a: (
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a)}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    # DeepSeek-V3.2 DSML encoding
    "dsml": lambda n, a: (
        f'<｜DSML｜function_calls>\n<｜DSML｜invoke name="{n}">\n'
        + "".join(
            f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>\n'
            for k, v in a.items()
        )
        + "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    ),
    # GigaChat 3.5 GCML
    "gcml": lambda n, a: (
        f'<｜GCML｜tool_calls>\n<｜GCML｜invoke name="{n}">\n'
        + "".join(f'<｜GCML｜parameter name="{k}">{v}</｜GCML｜parameter>\n' for k, v in a.items())
        + "</｜GCML｜invoke>\n</｜GCML｜tool_calls>"
    ),
    # Gemma 4 chat template
    "gemma4": lambda n, a: "<|tool_call>call:" + n + "{" + _kv(a, G4_QUOTE) + "}<tool_call|>",
    # FunctionGemma chat template
    "functiongemma": lambda n, a: (
        f"<start_function_call>call:{n}{{{_kv(a, '<escape>')}}}<end_function_call>"
    ),
    # Kimi K2 chat template
    "kimi": lambda n, a: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0"
        f"<|tool_call_argument_begin|>{json.dumps(a)}<|tool_call_end|>"
        "<|tool_calls_section_end|>"
    ),
    # Kimi-K3 XTML
    "kimi-k3": lambda n, a: (
        f'<|open|>tools<|sep|><|open|>call tool="{n}" index="1"<|sep|>'
        + "".join(
            f'<|open|>argument key="{k}" type="string"<|sep|>{v}<|close|>argument<|sep|>'
            for k, v in a.items()
        )
        + "<|close|>call<|sep|><|close|>tools<|sep|>"
    ),
    # OpenAI harmony (gpt-oss)
    "harmony": lambda n, a: (
        f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
        f"<|message|>{json.dumps(a)}<|call|>"
    ),
    # Functionary v3.2
    "functionary": lambda n, a: f">>>{n}\n{json.dumps(a)}",
    # PLaMo 3 chat template
    "plamo3": lambda n, a: (
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        f"<|plamo:begin_tool_name:plamo|>{n}<|plamo:end_tool_name:plamo|>"
        "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
        f"{json.dumps(a)}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        "<|plamo:end_tool_requests:plamo|>"
    ),
    # OLMo 3 chat template
    "pythonic-tag": lambda n, a: (
        "<function_calls>\n"
        + n
        + "("
        + ", ".join(f'{k}="{v}"' for k, v in a.items())
        + ")\n</function_calls>"
    ),
}

# Formats whose call block runs to the end of the reply (no closer of its own): their
# engines read one call list per reply, so a second call after text is no placement of
# theirs.
TO_THE_END = {"granite", "functools", "gigachat3"}

PLACEMENTS = {
    "alone": "{a}",
    "after a sentence": "Let me check the weather. {a}",
    "after paragraphs": "I will look it up.\n\nThe service answers quickly.\n\n{a}",
    "in a list item": "Plan:\n1. Check the weather:\n{a}\n2. Then tell you.",
    "followed by a sentence": "{a}\nI will tell you once it is back.",
    "two calls, text between": "{a}\nAnd the time, too:\n{b}",
}


def _expected(placement: str) -> list[tuple[str, dict]]:
    return [WEATHER, TIME] if "{b}" in PLACEMENTS[placement] else [WEATHER]


def _cases() -> list[tuple[str, str]]:
    return [
        (fmt, placement)
        for fmt in sorted(WRITE)
        for placement in PLACEMENTS
        if not (fmt in TO_THE_END and "{b}" in PLACEMENTS[placement])
    ]


def _reply(fmt: str, placement: str) -> str:
    return PLACEMENTS[placement].format(a=WRITE[fmt](*WEATHER), b=WRITE[fmt](*TIME))


def _calls(message: AIMessage) -> list[tuple[str, dict]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


def _streamed(fmt: str, text: str, size: int) -> AIMessage:
    parser = get_reader(fmt).stream_parser()
    for i in range(0, len(text), size):
        parser.feed(text[i : i + size])
    parser.close()
    return parser.message()


def test_every_format_has_a_case_and_the_names_are_one_constant() -> None:
    assert set(WRITE) == set(CALL_FORMATS)


def test_an_unknown_format_is_refused_with_the_known_names() -> None:
    for call in (
        lambda: get_reader("klingon"),
        lambda: normalize(AIMessage("x"), None, call_format="klingon"),
        lambda: with_dialect(ReplayChatModel(["x"]), "native", call_format="klingon"),
    ):
        with pytest.raises(
            ValueError,
            match=r"unknown call format 'klingon'.*hermes.*mistral",
        ):
            call()


@pytest.mark.parametrize(("fmt", "placement"), _cases())
def test_a_known_format_is_read_anywhere_in_the_reply_one_shot_and_streamed(
    fmt: str, placement: str
) -> None:
    text = _reply(fmt, placement)
    read = normalize(AIMessage(text), None, call_format=fmt, tools=TOOLS)
    assert _calls(read) == _expected(placement), text
    assert read.invalid_tool_calls == []
    assert read.response_metadata["fncall_markup_format"] == fmt
    whole = get_reader(fmt).parse(text)
    for size in range(1, 14):
        streamed = _streamed(fmt, text, size)
        assert _calls(streamed) == _calls(whole), (size, text)
        assert streamed.content == whole.content, (size, text)


@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_the_words_around_the_calls_are_the_answer(fmt: str) -> None:
    text = _reply(fmt, "in a list item")
    read = normalize(AIMessage(text), None, call_format=fmt)
    assert "Check the weather" in read.content
    # Qwen-Agent reads what follows ✿ARGS✿ up to ✿RESULT✿ as the arguments: no answer
    # text comes after a call of its own
    assert ("Then tell you." in read.content) == (fmt != "qwen")
    assert "Paris" not in read.content  # the call's text is no part of the answer


def _opens(fmt: str) -> list[str]:
    reader = get_reader(fmt)
    return [b.open for b in getattr(reader, "blocks", ()) if b.kind == "call"]


def _other_formats(fmt: str) -> list[str]:
    """Formats whose call text holds none of ``fmt``'s own call markers."""
    own = _opens(fmt)
    return [
        other
        for other in sorted(WRITE)
        if other != fmt and not any(m in WRITE[other](*WEATHER) for m in own)
    ]


@pytest.mark.parametrize("fmt", sorted(set(WRITE) - {"json", "pythonic"}))
def test_markup_of_another_format_is_text_once_the_format_is_known(fmt: str) -> None:
    for other in _other_formats(fmt):
        foreign = WRITE[other](*WEATHER)
        for text in (foreign, f"Let me check.\n{foreign}"):
            read = normalize(AIMessage(text), None, call_format=fmt)
            assert read.tool_calls == [] and read.invalid_tool_calls == [], (other, text)
            # and it was a call: read by its own format
            assert _calls(normalize(AIMessage(text), None, call_format=other)) == [WEATHER]


def test_bare_calls_are_not_read_once_a_marked_format_is_known() -> None:
    # a Hermes model's reply that is a bare JSON object is an answer, as vLLM's hermes
    # parser leaves it
    bare = WRITE["json"](*WEATHER)
    assert normalize(AIMessage(bare), None, call_format="hermes").tool_calls == []
    assert _calls(normalize(AIMessage(bare), None, call_format="json")) == [WEATHER]
    assert _calls(normalize(AIMessage(bare), None)) == [WEATHER]  # auto-detection reads it


QUOTING = {
    "list item": "Tools are called like this:\n- {a}\n- and the server runs them.",
    "blockquote": "The docs say:\n> {a}\n\nThat is how a call looks.",
    "quotation marks": 'The model writes "{a}" to call a tool.',
}


@pytest.mark.parametrize("fmt", sorted(WRITE))
@pytest.mark.parametrize("where", sorted(QUOTING))
def test_a_call_in_its_own_format_that_the_reply_only_shows_is_text(fmt, where) -> None:
    # where Markdown or prose quotes it, the markup is shown, not made: it stays in the
    # answer and runs nothing, read whole or streamed (tests/formats/test_placement.py has more)
    call = WRITE[fmt](*WEATHER)
    text = QUOTING[where].format(a=call)
    read = normalize(AIMessage(text), None, call_format=fmt)
    assert read.tool_calls == [] and read.invalid_tool_calls == [], text
    assert "get_weather" in read.content  # shown: the answer keeps it (less turn tokens)
    for size in (1, 7):
        assert _streamed(fmt, text, size).tool_calls == [], size


# --------------------------------------------------------------------------- repairs


def _read(fmt: str, text: str) -> AIMessage:
    read = normalize(AIMessage(text), None, call_format=fmt)
    assert _calls(get_reader(fmt).parse(text)) == _calls(read)
    for size in (1, 2, 3, 5, 7, 13):
        assert _calls(_streamed(fmt, text, size)) == _calls(read), size
    return read


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'),
        (
            "seed-oss",
            "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>"
            "\n</function>",
        ),
        (
            "minimax",
            '<minimax:tool_call>\n<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n</invoke>\n',
        ),
        ("nemotron", '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
        ("longcat", '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'),
        (
            "kimi",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>',
        ),
        (
            "deepseek",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
            '{"city": "Paris"}<｜tool▁call▁end｜>',
        ),
        (
            "dsml",
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
            '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
            "</｜DSML｜invoke>\n",
        ),
        (
            "harmony",
            "<|channel|>commentary to=functions.get_weather <|constrain|>json"
            '<|message|>{"city": "Paris"}',
        ),
        ("gemma4", '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}'),
        (
            "internlm",
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}',
        ),
        (
            "command-r",
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}]',
        ),
    ],
)
def test_a_closer_missing_at_the_end_of_the_reply(fmt: str, text: str) -> None:
    assert _calls(_read(fmt, "Checking. " + text)) == [WEATHER]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        # a <parameter=…> whose '>' is missing (vLLM's qwen3_coder takes the first word)
        (
            "hermes",
            "<tool_call>\n<function=get_weather>\n<parameter=city\nParis\n</parameter>\n"
            "</function>\n</tool_call>",
        ),
        # a </parameter> missing before </function>
        (
            "hermes",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
            "</function>\n</tool_call>",
        ),
        (
            "seed-oss",
            "<seed:tool_call><function=get_weather><parameter=city>Paris"
            "</function></seed:tool_call>",
        ),
    ],
)
def test_a_missing_angle_bracket_or_parameter_closer(fmt: str, text: str) -> None:
    assert _calls(_read(fmt, text)) == [WEATHER]


def test_a_gemma4_string_whose_closing_delimiter_is_missing_runs_to_the_brace() -> None:
    text = '<|tool_call>call:get_weather{city:<|"|>Paris}<tool_call|>'
    assert _calls(_read("gemma4", text)) == [WEATHER]
    # with no closer the reply may have been cut inside the string: not run
    cut = _read("gemma4", '<|tool_call>call:get_weather{city:<|"|>Par')
    assert cut.tool_calls == [] and "ended inside" in cut.invalid_tool_calls[0]["error"]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'),
        ("hermes", '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}</tool_call>'),
        (
            "llama-python-tag",
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}',
        ),
        ("longcat", '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}'),
    ],
)
def test_one_closing_brace_missing_at_the_end_of_a_json_call(fmt: str, text: str) -> None:
    assert _calls(_read(fmt, text)) == [WEATHER]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": {"n": 1}',
    ],
)
def test_a_call_whose_arguments_were_cut_is_not_run(text: str) -> None:
    read = _read("hermes", text)
    assert read.tool_calls == [] and len(read.invalid_tool_calls) == 1


@pytest.mark.parametrize(
    "opener",
    [
        "<|tool▁calls▁begin|>",
        "<｜tool calls begin｜>",
        "<｜tool▁calls｜>",
        "<｜tool_calls_begin｜>",
    ],
)
def test_deepseek_tokens_in_ascii_bars_and_other_spellings(opener: str) -> None:
    bar = "|" if opener.startswith("<|") else "｜"
    text = (
        f"{opener}<{bar}tool▁call▁begin{bar}>get_weather<{bar}tool▁sep{bar}>"
        f'{{"city": "Paris"}}<{bar}tool▁call▁end{bar}><{bar}tool▁calls▁end{bar}>'
    )
    assert _calls(_read("deepseek", "Let me look. " + text)) == [WEATHER]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        (
            "hermes",
            '<tool_call>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"zo',
        ),
        (
            "mistral",
            '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
            '{"name": "get_time", "arguments": {"zone": "C',
        ),
        ("nemotron", '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"na'),
    ],
)
def test_a_call_list_cut_keeps_its_complete_calls(fmt: str, text: str) -> None:
    read = _read(fmt, text)
    assert _calls(read) == [WEATHER] and len(read.invalid_tool_calls) == 1


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        (
            "react",
            'Action:\n```\n[{"action": "get_weather", "action_input": {"city": "Paris"}} '
            '{"action": "get_time", "action_input": {"zone": "CET"}}]\n```',
        ),
        (
            "mistral",
            '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}} '
            '{"name": "get_time", "arguments": {"zone": "CET"}}]',
        ),
        (
            "hermes",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
            '{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>',
        ),
    ],
)
def test_two_call_objects_with_the_comma_missing(fmt: str, text: str) -> None:
    assert _calls(_read(fmt, text)) == [WEATHER, TIME]


def test_qwen_xml_trims_the_layout_newline_around_a_value() -> None:
    text = (
        "<tool_call>\n<function=write>\n<parameter=code>\n    x = 1\n\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    # vLLM's qwen3_coder: one newline after the tag and one before the closer are layout
    assert _read("hermes", text).tool_calls[0]["args"] == {"code": "    x = 1\n"}


def test_glm_keeps_a_value_s_spaces() -> None:
    text = (
        "<tool_call>write\n<arg_key>code</arg_key>\n<arg_value>  x = 1 </arg_value>\n"
        "<arg_key>n</arg_key>\n<arg_value> 5 </arg_value>\n</tool_call>"
    )
    # vLLM's glm4_moe keeps a string as written; a JSON value is read stripped
    assert _read("hermes", text).tool_calls[0]["args"] == {"code": "  x = 1 ", "n": 5}


# --------------------------------------------------------------------------- the wrapper


def _sum(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    return reduce(lambda a, b: a + b, chunks)


@pytest.mark.parametrize("fmt", sorted(WRITE))
@pytest.mark.parametrize("chunk_size", [1, 5, 13])
def test_the_wrapper_reads_the_known_format_invoke_and_stream_alike(fmt, chunk_size) -> None:
    placement = "in a list item" if fmt in TO_THE_END else "two calls, text between"
    text = _reply(fmt, placement)
    for dialect in ("native", "hermes"):
        inner = ReplayChatModel([text, text], chunk_size=chunk_size)
        model = with_dialect(inner, dialect, call_format=fmt).bind_tools(TOOLS)
        invoked = model.invoke([HumanMessage("weather and time?")])
        streamed = _sum(list(model.stream([HumanMessage("weather and time?")])))
        assert _calls(invoked) == _expected(placement), (dialect, text)
        assert _calls(streamed) == _calls(invoked), (dialect, text)
        assert streamed.content == invoked.content


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}', WEATHER[1]),
        ('<|tool_call>call:get_weather{city:<|"|>Paris}<tool_call|>', WEATHER[1]),
        (
            "<|tool▁calls▁begin|><|tool▁call▁begin|>get_weather<|tool▁sep|>"
            '{"city": "Paris"}<|tool▁call▁end|><|tool▁calls▁end|>',
            WEATHER[1],
        ),
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value> Paris </arg_value>\n"
            "</tool_call>",
            {"city": " Paris "},
        ),
    ],
)
def test_auto_detection_makes_the_repairs_that_are_safe_without_the_format(text, args) -> None:
    read = normalize(AIMessage(text), None)
    assert [(c["name"], c["args"]) for c in read.tool_calls] == [("get_weather", args)]


@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_a_native_stream_never_shows_the_known_format_s_markup(fmt: str) -> None:
    text = _reply(fmt, "after a sentence")
    inner = ReplayChatModel([text], chunk_size=2)
    model = with_dialect(inner, "native", call_format=fmt).bind_tools(TOOLS)
    chunks = list(model.stream([HumanMessage("weather?")]))
    shown = "".join(str(c.content) for c in chunks)
    assert shown.rstrip() == "Let me check the weather.", shown  # a space shown stays
    assert _calls(_sum(chunks)) == [WEATHER]


def test_a_call_after_an_example_cue_is_text_however_the_format_is_known() -> None:
    # one rule of where a call stands, for the auto reader, a prompt dialect and a known
    # format alike
    shown = "For example:\n" + WRITE["hermes"](*WEATHER)
    assert normalize(AIMessage(shown), None).tool_calls == []
    assert normalize(AIMessage(shown), "hermes").tool_calls == []
    assert normalize(AIMessage(shown), None, call_format="hermes").tool_calls == []


@pytest.mark.parametrize("dialect", ["native", "hermes"])
def test_the_known_format_fits_its_loose_calls_to_the_tools(dialect: str) -> None:
    # ReAct's bare action_input string goes to the tool's one parameter, as the ReAct
    # dialect fits it, whatever dialect rendered the prompt
    text = 'Action:\n```\n{"action": "get_weather", "action_input": "Paris"}\n```'
    inner = ReplayChatModel([text, text], chunk_size=3)
    model = with_dialect(inner, dialect, call_format="react").bind_tools([get_weather])
    assert _calls(model.invoke("weather?")) == [WEATHER]
    assert _calls(_sum(list(model.stream("weather?")))) == [WEATHER]


QWEN3_CODER = (
    "<tool_call>\n<function=run_python>\n<parameter=code>\ndef f():\n    return 1\n"
    "</parameter>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
)


def test_qwen3_coder_s_wrapper_is_the_format_s_own_markup() -> None:
    # its template wraps each <function=…> in <tool_call>: declared as function-tag, the
    # wrapper is not left in the answer
    read = normalize(AIMessage("Let me run it.\n" + QWEN3_CODER), None, call_format="function-tag")
    assert read.content == "Let me run it."
    assert read.tool_calls[0]["args"] == {"code": "def f():\n    return 1", "city": "Paris"}


def test_a_qwen3_coder_call_written_indented_keeps_its_values_without_the_layout() -> None:
    # the indentation of the <parameter=…> line is layout on each line of the value;
    # the value's own indentation stays
    indented = "\n".join("   " + line for line in QWEN3_CODER.splitlines())
    text = "Plan:\n1. Run the code:\n" + indented + "\n2. Tell you."
    for fmt in ("function-tag", "hermes"):
        read = normalize(AIMessage(text), None, call_format=fmt)
        assert read.tool_calls[0]["args"] == {"code": "def f():\n    return 1", "city": "Paris"}


# --------------------------------------------------- declared reads no less than auto

_W_JSON = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
#: replies in a family's format that its engine's reader takes besides the template's
#: own shape (the wrappers of the family table, docs/dialects.md)
ENGINE_SHAPES: dict[str, list[str]] = {
    # llama.cpp's Qwen3-Coder reader: Qwen3-Coder may leave out the <tool_call>
    "hermes": ["<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"],
    # vLLM's xlam reader: the list behind [TOOL_CALLS], in <tool_call> tags, fenced
    "json": [
        f"[TOOL_CALLS]{_W_JSON}",
        f"<tool_call>{_W_JSON}</tool_call>",
        f"```json\n{_W_JSON}\n```",
    ],
    # vLLM's granite reader: <tool_call> for <|tool_call|>
    "granite": [f"<tool_call> {_W_JSON}", f"<tool_call>{_W_JSON}"],
    # vLLM's gigachat3 reader: GigaChat 3.1's marker
    "gigachat3": [
        f"<|function_call|>{_j(*WEATHER)}",
        f"Checking.<|function_call|>{_j(*WEATHER)}</s>",
    ],
}


def _format_cases() -> list[tuple[str, str]]:
    cases = [(fmt, _reply(fmt, placement)) for fmt, placement in _cases()]
    readers = {r.name: r for r in READERS}
    cases += [(fmt, text) for fmt, r in readers.items() if fmt in WRITE for text in r.examples]
    cases += [(fmt, text) for fmt, texts in ENGINE_SHAPES.items() for text in texts]
    return cases


def _multiset(message: AIMessage) -> list[str]:
    return sorted(json.dumps([c["name"], c["args"]], sort_keys=True) for c in message.tool_calls)


@pytest.mark.parametrize(("fmt", "text"), _format_cases())
def test_declaring_the_format_reads_no_less_than_auto(fmt: str, text: str) -> None:
    auto = normalize(AIMessage(text), None, tools=TOOLS)
    declared = normalize(AIMessage(text), None, call_format=fmt, tools=TOOLS)
    missing = [c for c in _multiset(auto) if c not in _multiset(declared)]
    assert not missing, (fmt, text, missing)


@pytest.mark.parametrize(("fmt", "text"), [(f, t) for f, ts in ENGINE_SHAPES.items() for t in ts])
def test_a_family_s_engine_shapes_are_read_with_the_format_declared(fmt: str, text: str) -> None:
    read = normalize(AIMessage(text), None, call_format=fmt, tools=TOOLS)
    assert _calls(read) == [WEATHER], (fmt, text)
    inner = ReplayChatModel([text, text], chunk_size=3)
    model = with_dialect(inner, "native", call_format=fmt).bind_tools(TOOLS)
    assert _calls(model.invoke("go")) == [WEATHER]
    chunks = list(model.stream("go"))
    assert _calls(_sum(chunks)) == [WEATHER]
    shown = "".join(str(c.content) for c in chunks)
    assert not any(
        m in shown for m in ("<tool_call>", "[TOOL_CALLS]", "<|function_call|>", "<function=")
    ), shown


@pytest.mark.parametrize(
    ("family", "fmt"),
    [
        ("Qwen3-Coder-30B-A3B", "hermes"),
        ("Qwen3.5-35B", "hermes"),
        ("Llama-xLAM-2-8b", "json"),
        ("granite-3.3-8b-instruct", "granite"),
        ("GigaChat3.1-10B-A1.8B", "gigachat3"),
    ],
)
def test_the_family_table_maps_a_family_to_its_engine_s_reader(family: str, fmt: str) -> None:
    found = format_of_name(family)
    assert found is not None and found.format == fmt
    assert check_call_format(family) == fmt
