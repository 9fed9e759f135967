"""The newer variants of the call formats the readers know, written from each format's
public description (chat templates; vLLM's, SGLang's and llama.cpp's parsers):

Qwen3-Coder / Qwen3.5 / Step-3.5 XML with the malformations servers repair, GLM-4.5 to
4.7, MiniMax-M2 and M3, Step-3, Kimi-K2-Thinking and Kimi-K3, Mistral v13 (Magistral,
Ministral 3), OLMo 3 and Llama 4 pythonic, Functionary v3.2 and Seed-OSS.

Each case is read one-shot and through ``normalize``; every case streams to the same
message for any chunking with no markup in the streamed text; a reply cut anywhere runs
only calls the whole reply holds and never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from test_readers import MARKERS, arg_key_call, calls, minimax_xml, seed_oss, streamed

from fncall_graph.adapters.formats.normalize import normalize
from fncall_graph.adapters.formats.readers import AUTO

NS = "]<]minimax[>["
K3_CALL = '<|open|>call tool="{}" index="{}"<|sep|>'
K3_ARG = '<|open|>argument key="{}" type="{}"<|sep|>{}<|close|>argument<|sep|>'
K3_END = "<|close|>call<|sep|>"
STEP_CALL = "<｜tool_call_begin｜>function<｜tool_sep｜>"
STEP_END = "<｜tool_call_end｜>"


@dataclass(frozen=True)
class Case:
    fmt: str
    text: str
    calls: list[tuple[str, dict[str, Any]]]
    content: str = ""
    invalid: int = 0
    reasoning: str | None = None
    # normalize reads it too (False: its quoting rule keeps it text; see the module list)
    normalized: bool = True
    tags: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return f"{self.fmt}:{self.tags[0] if self.tags else self.text[:30]!r}"


W = "get_weather"
T = "get_time"
PARIS = (W, {"city": "Paris"})
CET = (T, {"zone": "CET"})


def q3(name: str, params: dict[str, str], *, close: bool = True) -> str:
    """A Qwen3-Coder call as its template writes it."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return (
        f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"
        if close
        else (f"<tool_call>\n<function={name}>\n{body}")
    )


CASES: list[Case] = [
    # ---------------------------------------------------------------- Qwen3-Coder / 3.5
    Case("qwen3-xml", q3(W, {"city": "Paris"}), [PARIS], tags=("one",)),
    Case(
        "qwen3-xml",
        q3(W, {"city": "東京 ✈", "days": "3", "exact": "true", "when": '{"unit": "°C", "d": [1]}'}),
        [(W, {"city": "東京 ✈", "days": 3, "exact": True, "when": {"unit": "°C", "d": [1]}})],
        tags=("typed-unicode-nested",),
    ),
    Case("qwen3-xml", q3(W, {"city": "Paris"}) + "\n" + q3(T, {"zone": "CET"}), [PARIS, CET]),
    Case(
        "qwen3-xml",
        "我来查一下。\n" + q3(W, {"city": "Paris"}),
        [PARIS],
        content="我来查一下。",
        tags=("text-before",),
    ),
    Case(
        "qwen3-xml",
        q3(W, {"city": "Paris"}) + "\nAnd the time there:\n" + q3(T, {"zone": "CET"}),
        [PARIS, CET],
        content="And the time there:",
        tags=("text-between",),
    ),
    Case(
        "qwen3-xml",
        "<think>\nTwo tools.\n</think>\n\n" + q3(W, {"city": "Paris"}),
        [PARIS],
        reasoning="Two tools.",
        tags=("thinking",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
        "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
        [(W, {"city": "Paris", "days": 2})],
        tags=("missing-</parameter>-before-parameter",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>",
        [PARIS],
        tags=("missing-</parameter>-before-</function>",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        [PARIS],
        tags=("missing->-function",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city\nParis\n</parameter>\n"
        "<parameter=days\n2\n</parameter>\n</function>\n</tool_call>",
        [(W, {"city": "Paris", "days": 2})],
        tags=("missing->-parameter",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city Paris</parameter>\n"
        "<parameter=days: 2</parameter>\n</function>\n</tool_call>",
        [(W, {"city": "Paris", "days": 2})],
        tags=("missing->-value-on-the-line",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        [PARIS],
        tags=("doubled-parameter=",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</tool_call>\n" + q3(T, {"zone": "CET"}),
        [PARIS, CET],
        tags=("missing-</function>",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n</tool_call>",
        [PARIS, CET],
        tags=("missing-</function>-and-</tool_call>",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
        [PARIS],
        tags=("missing-</tool_call>-at-end",),
    ),
    Case(
        "qwen3-xml",
        q3(W, {"city": "Paris"}) + "\n" + q3(T, {"zone": "CET"}, close=False)[:-12],
        [PARIS],
        invalid=1,
        tags=("second-cut-in-value",),
    ),
    Case(
        "qwen3-xml",
        q3(W, {"city": "Paris"}) + "\n<tool_call>\n<function=get_ti",
        [PARIS],
        invalid=1,
        tags=("second-cut-in-name",),
    ),
    Case(
        "qwen3-xml",
        q3(W, {"city": "Paris"}) + "\n" + q3(T, {"zone": "CET"}, close=False),
        [PARIS],
        invalid=1,
        tags=("second-without-</function>",),
    ),
    Case(
        "qwen3-xml",
        q3(
            "write_file",
            {
                "path": "a.py",
                "content": 'print("</parameter>")\nx = "</tool_call>"  # </function>\nreturn x',
            },
        ),
        [
            (
                "write_file",
                {
                    "path": "a.py",
                    "content": 'print("</parameter>")\nx = "</tool_call>"  # </function>\nreturn x',
                },
            )
        ],
        tags=("closers-inside-a-value",),
    ),
    Case("qwen3-xml", "<tool_call>\n<function=get_time>\n</function>\n</tool_call>", [(T, {})]),
    Case(
        "qwen3-xml",
        q3(W, {"opts": "{'check': True, 'n': [1, 2]}", "note": "not {json"}),
        [(W, {"opts": {"check": True, "n": [1, 2]}, "note": "not {json"})],
        tags=("python-literal",),
    ),
    Case(
        "qwen3-xml",
        "<tool_call>\n<function={{ tool.name }}>\n</function>\n</tool_call>",
        [],
        invalid=1,
        tags=("unrendered-template-name",),
    ),
    # bare <function=> (no <tool_call>), as Qwen3-Coder writes it under some servers
    Case(
        "qwen3-xml",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
        "<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>",
        [PARIS, CET],
        tags=("bare-functions",),
    ),
    Case(
        "llama3.1-function",
        '<function=write_file>{"path": "a.html", "content": "<b>x</b></function>"}</function>',
        [("write_file", {"path": "a.html", "content": "<b>x</b></function>"})],
        tags=("closer-inside-json",),
    ),
    # ---------------------------------------------------------------- GLM-4.5 / 4.6 / 4.7
    Case(
        "glm",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
        [PARIS],
        tags=("4.7-one",),
    ),
    Case(
        "glm",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value>"
        "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>"
        "<tool_call>get_time<arg_key>zone</arg_key><arg_value>CET</arg_value></tool_call>",
        [(W, {"city": "北京", "days": 2}), CET],
        tags=("4.7-parallel",),
    ),
    Case(
        "glm",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "</tool_call>\n<tool_call>get_time\n<arg_key>zone</arg_key>\n<arg_value>CET</arg_value>\n"
        "</tool_call>",
        [PARIS, CET],
        tags=("4.5-parallel",),
    ),
    Case(
        "glm",
        "<tool_call>write_file<arg_key>content</arg_key><arg_value><function=f>"
        "<parameter=x>1</parameter></function></arg_value></tool_call>",
        [("write_file", {"content": "<function=f><parameter=x>1</parameter></function>"})],
        tags=("xml-inside-a-value",),
    ),
    Case(
        "glm",
        "<tool_call>write_file<arg_key>content</arg_key><arg_value>x = '</tool_call>'"
        "</arg_value></tool_call>",
        [("write_file", {"content": "x = '</tool_call>'"})],
        tags=("closer-inside-a-value",),
    ),
    Case("glm", "<tool_call>get_time</tool_call>", [(T, {})], tags=("4.7-no-args",)),
    Case("glm", "<tool_call>get_time\n</tool_call>", [(T, {})], tags=("4.5-no-args",)),
    Case(
        "glm",
        "好的，我查一下。\n<tool_call>get_weather<arg_key>when</arg_key>"
        '<arg_value>{"days": [1, 2], "unit": "°C"}</arg_value>'
        "<arg_key>exact</arg_key><arg_value>true</arg_value></tool_call>",
        [(W, {"when": {"days": [1, 2], "unit": "°C"}, "exact": True})],
        content="好的，我查一下。",
        tags=("text-before-nested",),
    ),
    Case(
        "glm",
        "<tool_call>get_weather<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value></tool_call>",
        [PARIS],
        tags=("escaped-newline-between",),
    ),
    Case(
        "glm",
        "<think>The user wants weather.</think>"
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
        [PARIS],
        reasoning="The user wants weather.",
        tags=("thinking",),
    ),
    Case(
        "glm",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
        "<tool_call>get_time<arg_key>zone</arg_key><arg_value>CE",
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    # ---------------------------------------------------------------- MiniMax-M2 / M2.1 / M3
    Case(
        "minimax-m2",
        "<think>Weather first.</think>\n\n<minimax:tool_call>\n"
        '<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        '<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
        [(W, {"city": "Paris", "days": 2})],
        reasoning="Weather first.",
        tags=("thinking",),
    ),
    Case(
        "minimax-m2",
        "Checking both.\n<minimax:tool_call>\n"
        "<invoke name='get_weather'>\n<parameter name='city'>東京</parameter>\n</invoke>\n"
        '<invoke name="get_time">\n<parameter name="zone">CET</parameter>\n</invoke>\n'
        "</minimax:tool_call>",
        [(W, {"city": "東京"}), CET],
        content="Checking both.",
        tags=("single-quotes-parallel",),
    ),
    Case(
        "minimax-m2",
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="when">'
        '{"days": [1, 2]}</parameter>\n</invoke>\n</minimax:tool_call>\n<minimax:tool_call>\n'
        '<invoke name="get_time">\n<parameter name="zone">\nCET\n</parameter>\n</invoke>\n'
        "</minimax:tool_call>",
        [(W, {"when": {"days": [1, 2]}}), CET],
        tags=("two-blocks-nested",),
    ),
    Case(
        "minimax-m2",
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        '</parameter>\n</invoke>\n<invoke name="get_time">\n<parameter name="zone">CE',
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    Case(
        "minimax-m2",
        '<minimax:tool_call>\n<invoke name="note">\n<parameter name="text">'
        "ends with </minimax:tool_call></parameter>\n</invoke>\n</minimax:tool_call>",
        [("note", {"text": "ends with </minimax:tool_call>"})],
        tags=("closer-inside-a-value",),
    ),
    Case(
        "minimax-m3",
        f'{NS}<tool_call>\n{NS}<invoke name="get_weather">\n{NS}<city>Paris{NS}</city>\n'
        f"{NS}<when>\n{NS}<days>\n{NS}<item>1{NS}</item>\n{NS}<item>2{NS}</item>\n{NS}</days>\n"
        f"{NS}<unit>°C{NS}</unit>\n{NS}</when>\n{NS}</invoke>\n"
        f'{NS}<invoke name="get_time">\n{NS}<zone>CET{NS}</zone>\n{NS}</invoke>\n{NS}</tool_call>',
        [(W, {"city": "Paris", "when": {"days": [1, 2], "unit": "°C"}}), CET],
        tags=("nested-parallel",),
    ),
    Case(
        "minimax-m3",
        f'Let me check.\n{NS}<tool_call>{NS}<invoke name="tag">{NS}<label>a{NS}</label>'
        f"{NS}<label>b{NS}</label>{NS}</invoke>{NS}</tool_call>",
        [("tag", {"label": ["a", "b"]})],
        content="Let me check.",
        tags=("repeated-tag",),
    ),
    Case(
        "minimax-m3",
        f'{NS}<tool_call>{NS}<invoke name="get_weather">{NS}<city>Paris{NS}</city>{NS}</invoke>'
        f'{NS}<invoke name="get_time">{NS}<zone>CE',
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    # ---------------------------------------------------------------- Step-3
    Case(
        "step3",
        "<｜tool_calls_begin｜>"
        + STEP_CALL
        + '<steptml:invoke name="get_weather"><steptml:parameter name="city">巴黎</steptml:parameter>'
        '<steptml:parameter name="days">3</steptml:parameter></steptml:invoke>'
        + STEP_END
        + "<｜tool_calls_end｜>",
        [(W, {"city": "巴黎", "days": 3})],
    ),
    Case(
        "step3",
        "I'll look both up.\n<｜tool_calls_begin｜>"
        + STEP_CALL
        + '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        "</steptml:parameter></steptml:invoke>"
        + STEP_END
        + "\n"
        + STEP_CALL
        + '<steptml:invoke name="get_time"><steptml:parameter name="zone">CET'
        "</steptml:parameter></steptml:invoke>" + STEP_END + "<｜tool_calls_end｜>",
        [PARIS, CET],
        content="I'll look both up.",
        tags=("parallel-text-before",),
    ),
    Case(
        "step3",
        "<｜tool_calls_begin｜>"
        + STEP_CALL
        + '<steptml:invoke name="get_weather"><steptml:parameter name="when">'
        '{"days": [1, 2], "unit": "°C"}</steptml:parameter></steptml:invoke>'
        + STEP_END
        + "<｜tool_calls_end｜>",
        [(W, {"when": {"days": [1, 2], "unit": "°C"}})],
        tags=("nested",),
    ),
    Case(
        "step3",
        "<｜tool_calls_begin｜>"
        + STEP_CALL
        + '<steptml:invoke name="get_weather"><steptml:parameter name="city">Par',
        [],
        invalid=1,
        tags=("cut",),
    ),
    # ---------------------------------------------------------------- Kimi-K2-Thinking / K3
    Case(
        "kimi-k2-thinking",
        "<think>Need weather and time.</think><|tool_calls_section_begin|>"
        '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}'
        "<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>"
        '{"zone": "CET"}<|tool_call_end|><|tool_calls_section_end|>',
        [PARIS, CET],
        reasoning="Need weather and time.",
    ),
    Case(
        "kimi-k2-thinking",
        "让我查一下。<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "東京", "when": {"days": [1, 2]}}<|tool_call_end|>'
        "<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>"
        '{"zone": "C',
        [(W, {"city": "東京", "when": {"days": [1, 2]}})],
        content="让我查一下。",
        invalid=1,
        tags=("second-cut",),
    ),
    Case(
        "kimi-k2-thinking",
        "<think>One call.</think>\n<|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>',
        [PARIS],
        reasoning="One call.",
        tags=("without-section",),
    ),
    Case(
        "kimi-k3",
        "<|open|>think<|sep|>Weather, then time.<|close|>think<|sep|>"
        "<|open|>response<|sep|>Let me look.<|close|>response<|sep|><|open|>tools<|sep|>"
        + K3_CALL.format(W, 1)
        + K3_ARG.format("city", "string", "Paris")
        + K3_ARG.format("days", "integer", "3")
        + K3_ARG.format("when", "object", '{"unit": "°C", "d": [1, 2]}')
        + K3_END
        + K3_CALL.format(T, 2)
        + K3_ARG.format("zone", "string", "CET")
        + K3_END
        + "<|close|>tools<|sep|>",
        [(W, {"city": "Paris", "days": 3, "when": {"unit": "°C", "d": [1, 2]}}), CET],
        content="Let me look.",
        reasoning="Weather, then time.",
    ),
    Case(
        "kimi-k3",
        "<|open|>tools<|sep|>"
        + K3_CALL.format("note", 1)
        + K3_ARG.format("text", "string", "42")
        + K3_ARG.format("q", "string", "say &quot;hi&quot; <b>")
        + K3_END
        + "<|close|>tools<|sep|>",
        [("note", {"text": "42", "q": "say &quot;hi&quot; <b>"})],
        tags=("strings-stay-raw",),
    ),
    Case(
        "kimi-k3",
        "<|open|>tools<|sep|>"
        + K3_CALL.format(W, 1)
        + K3_ARG.format("city", "string", "Paris")
        + K3_END
        + K3_CALL.format(T, 2)
        + '<|open|>argument key="zone" type="string"<|sep|>CE',
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    Case(
        "kimi-k3",
        "<|open|>think<|sep|>Easy.<|close|>think<|sep|><|open|>response<|sep|>It is sunny."
        "<|close|>response<|sep|><|close|>message<|sep|>",
        [],
        content="It is sunny.",
        reasoning="Easy.",
        tags=("answer-only",),
    ),
    # ---------------------------------------------------------------- Mistral v13
    Case(
        "mistral-v13",
        "[THINK]The user asks for two things.[/THINK]"
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
        [PARIS, CET],
        reasoning="The user asks for two things.",
        tags=("think-parallel",),
    ),
    Case(
        "mistral-v13",
        'Je regarde.[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}'
        '[TOOL_CALLS]get_time[CALL_ID]Zz9yY8xX7[ARGS]{"zone": "CET"}',
        [PARIS, CET],
        content="Je regarde.",
        tags=("call-id-text-before",),
    ),
    Case(
        "mistral-v13",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "東京 ✈", "when": {"days": [1, 2]}}\n'
        "Je reviens avec la météo.",
        [(W, {"city": "東京 ✈", "when": {"days": [1, 2]}})],
        content="Je reviens avec la météo.",
        tags=("nested-text-after",),
    ),
    Case(
        "mistral-v13",
        '[TOOL_CALLS]log[ARGS]{"text": "to call, write [TOOL_CALLS]f[ARGS]{} </s>"}',
        [("log", {"text": "to call, write [TOOL_CALLS]f[ARGS]{} </s>"})],
        tags=("marker-inside-string",),
    ),
    Case(
        "mistral-v13",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"zone": "C',
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    Case(
        "mistral-v13",
        "[THINK]Paris, so Celsius.[/THINK]It is 22 °C in Paris.",
        [],
        content="It is 22 °C in Paris.",
        reasoning="Paris, so Celsius.",
        tags=("answer-only",),
    ),
    # ---------------------------------------------------------------- OLMo 3 / Llama 4
    Case(
        "olmo3",
        '<function_calls>\nget_weather(city="Paris", exact=true, unit=null)\n'
        'get_time(zone="CET")\n</function_calls>',
        [(W, {"city": "Paris", "exact": True, "unit": None}), CET],
    ),
    Case(
        "olmo3",
        "Let me check.\n<function_calls>\n"
        "get_weather(city='東京', when={'days': [1, 2], 'unit': '°C'})\n</function_calls>",
        [(W, {"city": "東京", "when": {"days": [1, 2], "unit": "°C"}})],
        content="Let me check.",
        tags=("text-before-nested",),
    ),
    Case(
        "olmo3",
        '<function_calls>\nget_weather(city="Par',
        [],
        invalid=1,
        tags=("cut",),
    ),
    Case(
        "olmo3",
        '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        '</invoke>\n<invoke name="get_time">\n<parameter name="zone">CET</parameter>\n</invoke>\n'
        "</function_calls>",
        [PARIS, CET],
        tags=("xml-invokes",),
    ),
    Case(
        "olmo3",
        '<function_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</function_calls>',
        [PARIS],
        tags=("json-list",),
    ),
    Case(
        "llama4",
        '<|python_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|python_end|>',
        [PARIS, CET],
    ),
    Case(
        "llama4",
        '[get_weather(city="Paris", when={"days": [1, 2]})]',
        [(W, {"city": "Paris", "when": {"days": [1, 2]}})],
        tags=("bare-list",),
    ),
    Case(
        "llama4",
        'I will check.\n<|python_start|>[get_weather(city="東京")]<|python_end|><|eom|>',
        [(W, {"city": "東京"})],
        content="I will check.",
        tags=("text-before",),
    ),
    Case(
        "llama4",
        '<|python_start|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|python_end|>',
        [PARIS],
        tags=("json-between-tags",),
    ),
    Case("llama4", '<|python_start|>[get_weather(city="Pa', [], invalid=1, tags=("cut",)),
    # ---------------------------------------------------------------- Functionary v3.2
    Case(
        "functionary",
        '>>>all\nLet me look.\n>>>get_weather\n{"city": "Paris"}\n>>>get_time\n{"zone": "CET"}',
        [PARIS, CET],
        content="Let me look.",
    ),
    Case(
        "functionary",
        'all\nLet me look.\n>>>get_weather\n{"city": "Paris"}',
        [PARIS],
        content="Let me look.",
        tags=("bare-all",),
    ),
    Case(
        "functionary",
        'get_weather\n{"city": "東京", "when": {"days": [1, 2]}}>>>get_time\n{"zone": "CET"}',
        [(W, {"city": "東京", "when": {"days": [1, 2]}}), CET],
        normalized=False,
        tags=("bare-name",),
    ),
    Case("functionary", "all\nSunny, 22 °C.", [], content="Sunny, 22 °C.", normalized=False),
    Case(
        "functionary",
        '>>>get_weather\n{"city": "Paris"}\nI will wait for the result.',
        [PARIS],
        content="I will wait for the result.",
        tags=("text-after-the-arguments",),
    ),
    Case(
        "functionary",
        '>>>log\n{"text": "a >>>b"}',
        [("log", {"text": "a >>>b"})],
        tags=(">>>-inside-string",),
    ),
    Case(
        "functionary",
        ">>>python\nprint(2 + 2)",
        [("python", {"code": "print(2 + 2)"})],
        tags=("python-code",),
    ),
    Case(
        "functionary",
        '>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "C',
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    # ---------------------------------------------------------------- Seed-OSS
    Case(
        "seed-oss",
        "<seed:think>The user wants weather.</seed:think>\n<seed:tool_call>\n"
        "<function=get_weather>\n<parameter=city>Paris</parameter>\n"
        "<parameter=days>2</parameter>\n</function>\n</seed:tool_call>",
        [(W, {"city": "Paris", "days": 2})],
        reasoning="The user wants weather.",
    ),
    Case(
        "seed-oss",
        "<seed:think>Both.</seed:think>好的。\n<seed:tool_call><function=get_weather>"
        '<parameter=when>{"days": [1, 2]}</parameter></function></seed:tool_call>'
        "<seed:tool_call><function=get_time><parameter=zone>CET</parameter></function>"
        "</seed:tool_call>",
        [(W, {"when": {"days": [1, 2]}}), CET],
        content="好的。",
        reasoning="Both.",
        tags=("compact-parallel",),
    ),
    Case(
        "seed-oss",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
        "</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=get_time>\n"
        "<parameter=zone>CE",
        [PARIS],
        invalid=1,
        tags=("second-cut",),
    ),
    Case(
        "seed-oss",
        "<seed:think>No tool needed.</seed:think>It is sunny.<seed:eos>",
        [],
        content="It is sunny.",
        reasoning="No tool needed.",
        tags=("answer-only",),
    ),
    Case(
        "seed-oss",
        "<seed:think>I might call <seed:tool_call><function=get_time></function>"
        "</seed:tool_call> later.</seed:think>It is sunny.",
        [],
        content="It is sunny.",
        reasoning="I might call <seed:tool_call><function=get_time></function>"
        "</seed:tool_call> later.",
        tags=("call-while-thinking",),
    ),
]


def check(message: AIMessage, case: Case) -> None:
    assert calls(message) == case.calls, case.text
    assert message.content == case.content, case.text
    assert len(message.invalid_tool_calls) == case.invalid, message.invalid_tool_calls
    for bad in message.invalid_tool_calls:
        assert bad["error"], bad
    assert message.additional_kwargs.get("reasoning_content") == case.reasoning


@pytest.mark.parametrize("case", CASES, ids=str)
def test_read_one_shot(case):
    check(AUTO.parse(case.text), case)


@pytest.mark.parametrize("case", [c for c in CASES if c.normalized], ids=str)
def test_read_through_normalize(case):
    check(normalize(AIMessage(content=case.text), None), case)


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=st.sampled_from(CASES), data=st.data())
def test_any_chunking_streams_the_same_message_and_no_markup(case, data):
    cuts = data.draw(st.lists(st.integers(0, len(case.text)), max_size=10))
    message, shown = streamed(case.text, cuts)
    check(message, case)
    assert shown == case.content
    assert not any(m in shown for m in MARKERS), shown


# raw code has no closer: code cut at a statement's end is whole code, as servers read it;
# a GLM value cut right after a </tool_call> it holds is a value whose </arg_value> is
# missing, which the servers repair (the reply ends where the call's closer came)
CUTTABLE = [
    c
    for c in CASES
    if not c.invalid
    and "python-code" not in c.tags
    and not (c.fmt == "glm" and "closer-inside-a-value" in c.tags)
]


@pytest.mark.parametrize("case", CUTTABLE, ids=str)
def test_a_reply_cut_anywhere_runs_only_calls_of_the_whole_reply(case):
    for end in range(len(case.text) + 1):
        cut = case.text[:end]
        for call in calls(AUTO.parse(cut)):
            assert call in case.calls, (cut, call)


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "log", "arguments": {"text": "a </tool_call> b"}}\n</tool_call>',
        '<tool_call>{"name": "log", "arguments": {"text": "say \\"</tool_call>\\" now"}}'
        "</tool_call>",
    ],
)
def test_a_closer_inside_a_json_string_does_not_end_the_call(text):
    from fncall_graph.adapters import get_dialect

    expected = AUTO.parse(text)
    assert [c["name"] for c in expected.tool_calls] == ["log"]
    assert "</tool_call>" in expected.tool_calls[0]["args"]["text"]
    assert expected.content == ""
    assert calls(get_dialect("hermes").parse(text)) == calls(expected)
    for cut in range(1, len(text)):
        message, shown = streamed(text, [cut])
        assert calls(message) == calls(expected) and shown == ""


# -- untyped formats: any text value survives any chunking

XML_WRITERS = {
    "qwen3-xml": lambda cs: "\n".join(q3(n, a) for n, a in cs),
    "glm-4.7": lambda cs: "".join(arg_key_call(n, a) for n, a in cs),
    "minimax-m2": minimax_xml,
    "minimax-m3": lambda cs: (
        f"{NS}<tool_call>\n"
        + "".join(
            f'{NS}<invoke name="{n}">\n'
            + "".join(f"{NS}<{k}>{v}{NS}</{k}>\n" for k, v in a.items())
            + f"{NS}</invoke>\n"
            for n, a in cs
        )
        + f"{NS}</tool_call>"
    ),
    "step3": lambda cs: (
        "<｜tool_calls_begin｜>"
        + "".join(
            STEP_CALL
            + f'<steptml:invoke name="{n}">'
            + "".join(
                f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in a.items()
            )
            + "</steptml:invoke>"
            + STEP_END
            for n, a in cs
        )
        + "<｜tool_calls_end｜>"
    ),
    "kimi-k3": lambda cs: (
        "<|open|>tools<|sep|>"
        + "".join(
            K3_CALL.format(n, i)
            + "".join(K3_ARG.format(k, "string", v) for k, v in a.items())
            + K3_END
            for i, (n, a) in enumerate(cs)
        )
        + "<|close|>tools<|sep|>"
    ),
    "seed-oss": seed_oss,
}

# text a value may hold: angle brackets, slashes and equals signs, not a format's closers
TEXT = (
    st.text("ab XY東京✈<>/=_.,:!\n", min_size=1, max_size=24)
    .map(str.strip)
    .filter(
        lambda s: (
            s[:1].isalpha()
            and not any(
                m in s
                for m in (
                    "</",
                    "<parameter",
                    "<function",
                    "<arg_",
                    "<invoke",
                    "<tool_call",
                    "<item",
                )
            )
        )
    )
)
UNTYPED_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "log_it"]),
        st.dictionaries(st.sampled_from(["city", "note", "q"]), TEXT, min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=3,
)


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(fmt=st.sampled_from(sorted(XML_WRITERS)), cs=UNTYPED_CALLS, data=st.data())
def test_text_values_survive_any_chunking(fmt, cs, data):
    text = "先查一下。\n" + XML_WRITERS[fmt](cs)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    message, shown = streamed(text, cuts)
    assert calls(message) == cs, text
    assert message.content == shown == "先查一下。"
    assert calls(normalize(AIMessage(content=text), None)) == cs


def test_a_reader_that_fails_to_judge_a_closer_still_reads_the_reply():
    from fncall_graph.adapters.formats.markup import Block
    from fncall_graph.adapters.formats.readers import AutoReader, Reader
    from fncall_graph.adapters.formats.readers.base import named_call

    class Broken(Reader):
        name = "broken"
        blocks = (Block("<x>", ("</x>",), "call"),)

        def read_block(self, block, text, *, closed):
            yield named_call(text, {}, text)

        def block_may_close(self, block, text, marker):
            raise RuntimeError("bug")

    message = AutoReader(readers=(Broken(),)).parse("<x>ping</x> after")
    assert calls(message) == [("ping", {})] and message.content == "after"
