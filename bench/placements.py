"""Where a call sits in a reply: made calls read, shown calls not run, per call format.

Its cases come from the formats' public chat templates and parsers, not from the readers.
For every call format the readers know (``CALL_FORMATS``; ``json``, ``pythonic`` and
``react`` are left out, see ``SKIPPED``), one call of ``get_weather({"city": "Paris"})``
and one of ``get_time({"zone": "CET"})`` are written the way that family's chat template
or its inference server's tool parser writes them (see ``FORMATS`` for the source of
each), then placed in replies as a model or a doc-writing answer would place them:

- MADE:  the model's own call (alone, after prose on the same line or the line before,
         between paragraphs, between or under list items, after a heading, a bold line,
         reasoning in ``<think>``, a Chinese sentence, "…", followed by a remark, two
         calls apart or back to back, …): it must be read, with exactly these names and
         arguments;
- SHOWN: the call quoted as an example of the syntax (list items of every kind, block
         quotes, quotes of every kind and language, inline code, fenced and indented
         code blocks, "For example:", "e.g.", "such as", "例如：", a table cell, a link
         text, an HTML element, prose that explains it): no tool call may come of it.

Some families write their calls more than one way; those writings are extra rows,
``format/variant`` (``VARIANTS``), read with the same ``call_format``. Each writing is
first checked to be read when it stands alone (and collapsed onto one line, the form the
inline placements quote), so a shown case that does not run is not just an unreadable call.

Each reply is read by ``normalize(AIMessage(text), None, call_format=FMT,
tool_names=["get_weather", "get_time"])`` — the reader told the model's format. With
``--stream`` each reply is also read through ``with_dialect(ReplayChatModel(...),
"native", call_format=FMT)`` bound to two tools, by ``invoke`` and by ``stream`` (7
characters a chunk), and disagreements between the two are counted (and between
``normalize`` and ``invoke``).

Prints a table per placement (read / ran out of the formats) and per format (made read,
shown ran), with totals. Nothing is asserted.

    python bench/placements.py [--verbose] [--stream] [--auto] [--set repo|public]
                               [--formats hermes,mistral,...]

``--auto`` declares no format: each reply is read as a thread's first reply, its format
detected. ``--set public`` measures the placements of ``bench/placements_public.py``
instead: taken from public descriptions (model cards, READMEs, chat templates' few-shot
pairs, bug reports), each judged made or shown before it was run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from fncall_graph.adapters import normalize
from fncall_graph.adapters.formats.readers import CALL_FORMATS

TOOL_NAMES = ["get_weather", "get_time"]
WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET"})

SKIPPED = {
    "json": "bare JSON has no markup: a quoted call and a made call are the same bytes",
    "pythonic": "bare [f(x=1)] has no markup: a quoted call and a made call are the same bytes",
    "react": "ReAct is a whole-reply protocol (Thought/Action/Action Input lines), not a "
    "call that can be placed inside prose",
}


# ---------------------------------------------------------------------------- writings
@dataclass(frozen=True)
class Writing:
    """One format's calls: ``w`` (weather), ``t`` (time), ``both`` (two calls as the family
    writes parallel calls), ``inline`` (how to collapse a call onto one line)."""

    w: str
    t: str
    both: str
    source: str
    inline_sep: str = ""


def _pair(w: str, t: str, sep: str, source: str, inline_sep: str = "") -> Writing:
    return Writing(w, t, w + sep + t, source, inline_sep)


_JW = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
_JT = '{"name": "get_time", "arguments": {"zone": "CET"}}'
_PW = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
_PT = '{"name": "get_time", "parameters": {"zone": "CET"}}'

_DS = (
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
)


def _deepseek(name: str, args: str) -> str:
    return f"{_DS[1]}{name}{_DS[2]}{args}{_DS[3]}"


def _invoke(tag: str, name: str, key: str, value: str) -> str:
    return (
        f'<｜{tag}｜invoke name="{name}">\n<｜{tag}｜parameter name="{key}" string="true">'
        f"{value}</｜{tag}｜parameter>\n</｜{tag}｜invoke>"
    )


def _kimi(name: str, i: int, args: str) -> str:
    return (
        f"<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{args}"
        "<|tool_call_end|>"
    )


def _kimi3(name: str, i: int, key: str, value: str) -> str:
    return (
        f'<|open|>call tool="{name}" index="{i}"<|sep|><|open|>argument key="{key}" '
        f'type="string"<|sep|>{value}<|close|>argument<|sep|><|close|>call<|sep|>'
    )


def _plamo(name: str, args: str) -> str:
    return (
        "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
        f"{name}<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
        f"<|plamo:constrain|>json<|plamo:msg|>{args}<|plamo:end_tool_arguments:plamo|>"
        "<|plamo:end_tool_request:plamo|>"
    )


def _step3(name: str, key: str, value: str) -> str:
    return (
        f'<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="{name}">\n'
        f'<steptml:parameter name="{key}">{value}</steptml:parameter>\n</steptml:invoke>'
        "<｜tool_call_end｜>"
    )


def _hy(name: str, key: str, value: str) -> str:
    return (
        f"<tool_call:opensource>{name}<tool_sep:opensource><arg_key:opensource>{key}"
        f"</arg_key:opensource><arg_value:opensource>{value}</arg_value:opensource>"
        "</tool_call:opensource>"
    )


def _mm(name: str, key: str, value: str) -> str:
    return f'<invoke name="{name}">\n<parameter name="{key}">{value}</parameter>\n</invoke>'


def _fn_tag(name: str, key: str, value: str) -> str:
    return (
        f"<tool_call>\n<function={name}>\n<parameter={key}>\n{value}\n</parameter>\n"
        "</function>\n</tool_call>"
    )


def _seed(name: str, key: str, value: str) -> str:
    return (
        f"<seed:tool_call>\n<function={name}>\n<parameter={key}>{value}</parameter>\n"
        "</function>\n</seed:tool_call>"
    )


FORMATS: dict[str, Writing] = {
    "hermes": _pair(
        f"<tool_call>\n{_JW}\n</tool_call>",
        f"<tool_call>\n{_JT}\n</tool_call>",
        "\n",
        "Hermes-2-Pro / Qwen2.5 chat template; vLLM hermes_tool_parser",
    ),
    "qwen": _pair(
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris"}',
        '✿FUNCTION✿: get_time\n✿ARGS✿: {"zone": "CET"}',
        "\n",
        "Qwen-Agent qwen_fncall_prompt.py (FN_NAME/FN_ARGS)",
        " ",
    ),
    "function-tag": _pair(
        _fn_tag("get_weather", "city", "Paris"),
        _fn_tag("get_time", "zone", "CET"),
        "\n",
        "Qwen3-Coder chat template; vLLM qwen3coder_tool_parser",
    ),
    "seed-oss": _pair(
        _seed("get_weather", "city", "Paris"),
        _seed("get_time", "zone", "CET"),
        "\n",
        "Seed-OSS chat template; vLLM seed_oss_tool_parser",
    ),
    "minimax": Writing(
        f"<minimax:tool_call>\n{_mm('get_weather', 'city', 'Paris')}\n</minimax:tool_call>",
        f"<minimax:tool_call>\n{_mm('get_time', 'zone', 'CET')}\n</minimax:tool_call>",
        f"<minimax:tool_call>\n{_mm('get_weather', 'city', 'Paris')}\n"
        f"{_mm('get_time', 'zone', 'CET')}\n</minimax:tool_call>",
        "MiniMax-M2 chat template; vLLM minimax_m2_tool_parser",
    ),
    "step3": Writing(
        f"<｜tool_calls_begin｜>\n{_step3('get_weather', 'city', 'Paris')}\n<｜tool_calls_end｜>",
        f"<｜tool_calls_begin｜>\n{_step3('get_time', 'zone', 'CET')}\n<｜tool_calls_end｜>",
        f"<｜tool_calls_begin｜>\n{_step3('get_weather', 'city', 'Paris')}\n"
        f"{_step3('get_time', 'zone', 'CET')}\n<｜tool_calls_end｜>",
        "Step-3 (steptml), SGLang Step3Detector docstring layout; vLLM step3_tool_parser",
    ),
    "tool-calls-tag": Writing(
        f"<tool_calls>[{_JW}]</tool_calls>",
        f"<tool_calls>[{_JT}]</tool_calls>",
        f"<tool_calls>[{_JW}, {_JT}]</tool_calls>",
        "Hunyuan-A13B; SGLang HunyuanDetector docstring, vLLM hunyuan_a13b parser",
    ),
    "hunyuan-labelled": Writing(
        f"<tool_calls:opensource>{_hy('get_weather', 'city', 'Paris')}</tool_calls:opensource>",
        f"<tool_calls:opensource>{_hy('get_time', 'zone', 'CET')}</tool_calls:opensource>",
        f"<tool_calls:opensource>{_hy('get_weather', 'city', 'Paris')}"
        f"{_hy('get_time', 'zone', 'CET')}</tool_calls:opensource>",
        "Hunyuan HY v3 (token_suffix ':opensource'); vLLM hy_v3_tool_parser regexes",
    ),
    "granite": Writing(
        f"<|tool_call|>[{_JW}]",
        f"<|tool_call|>[{_JT}]",
        f"<|tool_call|>[{_JW}, {_JT}]",
        "Granite 3.x chat template; vLLM granite_tool_parser",
    ),
    "granite-fc": _pair(
        f"<function_call> {_JW}",
        f"<function_call> {_JT}",
        "\n",
        "granite-20b-functioncalling; vLLM granite_20b_fc_tool_parser",
    ),
    "functools": Writing(
        f"functools[{_JW}]",
        f"functools[{_JT}]",
        f"functools[{_JW}, {_JT}]",
        "Phi-4-mini; vLLM phi4mini_tool_parser",
    ),
    "internlm": _pair(
        f"<|action_start|><|plugin|>\n{_PW}<|action_end|>",
        f"<|action_start|><|plugin|>\n{_PT}<|action_end|>",
        "\n",
        "InternLM2.5 chat template; vLLM internlm2_tool_parser",
    ),
    "command-r": Writing(
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
        '"parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_time", '
        '"parameters": {"zone": "CET"}}\n]<|END_ACTION|>',
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
        '"parameters": {"city": "Paris"}},\n    {"tool_call_id": "1", "tool_name": '
        '"get_time", "parameters": {"zone": "CET"}}\n]<|END_ACTION|>',
        "Command R7B / Command A chat template; llama.cpp common/chat.cpp (command_r7b)",
    ),
    "llama-python-tag": _pair(
        f"<|python_tag|>{_PW}",
        f"<|python_tag|>{_PT}",
        "; ",
        "Llama 3.1 chat template (custom tools); vLLM llama3_json",
    ),
    "lfm2": Writing(
        '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
        '<|tool_call_start|>[get_time(zone="CET")]<|tool_call_end|>',
        '<|tool_call_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|tool_call_end|>',
        "LFM2 model card chat template; llama.cpp common/chat.cpp (lfm2)",
    ),
    "apertus": Writing(
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',
        '<|tools_prefix|>[{"get_time": {"zone": "CET"}}]<|tools_suffix|>',
        '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, '
        '{"get_time": {"zone": "CET"}}]<|tools_suffix|>',
        "Apertus chat template; llama.cpp common/chat.cpp (apertus)",
    ),
    "nemotron": Writing(
        f"<TOOLCALL>[{_JW}]</TOOLCALL>",
        f"<TOOLCALL>[{_JT}]</TOOLCALL>",
        f"<TOOLCALL>[{_JW}, {_JT}]</TOOLCALL>",
        "Llama-Nemotron chat template; llama.cpp common/chat.cpp (nemotron_v2)",
    ),
    "longcat": _pair(
        f"<longcat_tool_call>\n{_JW}\n</longcat_tool_call>",
        f"<longcat_tool_call>\n{_JT}\n</longcat_tool_call>",
        "\n",
        "LongCat-Flash chat template; vLLM longcat_tool_parser",
    ),
    "gigachat3": _pair(
        f"function call<|role_sep|>\n{_JW}",
        f"function call<|role_sep|>\n{_JT}",
        "\n",
        "GigaChat3 chat template; reader example checked",
        " ",
    ),
    "mistral": _pair(
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        '[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
        "",
        "Mistral tokenizer v11+ (Mistral Small 3.2, Magistral); vLLM mistral",
    ),
    "deepseek": Writing(
        _DS[0] + _deepseek("get_weather", '{"city": "Paris"}') + _DS[4],
        _DS[0] + _deepseek("get_time", '{"zone": "CET"}') + _DS[4],
        _DS[0]
        + _deepseek("get_weather", '{"city": "Paris"}')
        + _deepseek("get_time", '{"zone": "CET"}')
        + _DS[4],
        "DeepSeek-V3.1 chat template; vLLM deepseekv31_tool_parser",
    ),
    "dsml": Writing(
        f"<｜DSML｜function_calls>\n{_invoke('DSML', 'get_weather', 'city', 'Paris')}\n"
        "</｜DSML｜function_calls>",
        f"<｜DSML｜function_calls>\n{_invoke('DSML', 'get_time', 'zone', 'CET')}\n"
        "</｜DSML｜function_calls>",
        f"<｜DSML｜function_calls>\n{_invoke('DSML', 'get_weather', 'city', 'Paris')}\n"
        f"{_invoke('DSML', 'get_time', 'zone', 'CET')}\n</｜DSML｜function_calls>",
        "DeepSeek-V3.2 encoding (DSML); vLLM deepseekv32_tool_parser",
    ),
    "gcml": Writing(
        f"<｜GCML｜tool_calls>\n{_invoke('GCML', 'get_weather', 'city', 'Paris')}\n"
        "</｜GCML｜tool_calls>",
        f"<｜GCML｜tool_calls>\n{_invoke('GCML', 'get_time', 'zone', 'CET')}\n"
        "</｜GCML｜tool_calls>",
        f"<｜GCML｜tool_calls>\n{_invoke('GCML', 'get_weather', 'city', 'Paris')}\n"
        f"{_invoke('GCML', 'get_time', 'zone', 'CET')}\n</｜GCML｜tool_calls>",
        "GigaChat 3.5 (GCML); vLLM gigachat35 parser and its tests, SGLang detector",
    ),
    "gemma4": _pair(
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
        '<|tool_call>call:get_time{zone:<|"|>CET<|"|>}<tool_call|>',
        "",
        "Gemma 4; vLLM gemma4_tool_parser docstring",
    ),
    "functiongemma": _pair(
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
        "<start_function_call>call:get_time{zone:<escape>CET<escape>}<end_function_call>",
        "",
        "FunctionGemma model card chat template; vLLM functiongemma parser",
    ),
    "kimi": Writing(
        "<|tool_calls_section_begin|>"
        + _kimi("get_weather", 0, '{"city": "Paris"}')
        + "<|tool_calls_section_end|>",
        "<|tool_calls_section_begin|>"
        + _kimi("get_time", 0, '{"zone": "CET"}')
        + "<|tool_calls_section_end|>",
        "<|tool_calls_section_begin|>"
        + _kimi("get_weather", 0, '{"city": "Paris"}')
        + _kimi("get_time", 1, '{"zone": "CET"}')
        + "<|tool_calls_section_end|>",
        "Kimi-K2 chat template / docs tool_call_guidance; vLLM kimi_k2_tool_parser",
    ),
    "kimi-k3": Writing(
        "<|open|>tools<|sep|>"
        + _kimi3("get_weather", 1, "city", "Paris")
        + "<|close|>tools<|sep|>",
        "<|open|>tools<|sep|>" + _kimi3("get_time", 1, "zone", "CET") + "<|close|>tools<|sep|>",
        "<|open|>tools<|sep|>"
        + _kimi3("get_weather", 1, "city", "Paris")
        + _kimi3("get_time", 2, "zone", "CET")
        + "<|close|>tools<|sep|>",
        "Kimi K3 XTML; markers from SGLang kimik3_format.py, attributes as the "
        "reader's example (no template found)",
    ),
    "harmony": _pair(
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Paris"}<|call|>',
        "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"
        '{"zone": "CET"}<|call|>',
        "<|start|>assistant",
        "openai/harmony docs (gpt-oss); vLLM openai_tool_parser",
    ),
    # The newline after the name is the syntax: a one-line quote is no call at all, so
    # the "inline" placements quote it on two lines.
    "functionary": _pair(
        '>>>get_weather\n{"city": "Paris"}',
        '>>>get_time\n{"zone": "CET"}',
        "",
        "functionary v3.2 (meetkai); llama.cpp common/chat.cpp",
        "\n",
    ),
    "plamo3": Writing(
        "<|plamo:begin_tool_requests:plamo|>"
        + _plamo("get_weather", '{"city": "Paris"}')
        + "<|plamo:end_tool_requests:plamo|>",
        "<|plamo:begin_tool_requests:plamo|>"
        + _plamo("get_time", '{"zone": "CET"}')
        + "<|plamo:end_tool_requests:plamo|>",
        "<|plamo:begin_tool_requests:plamo|>"
        + _plamo("get_weather", '{"city": "Paris"}')
        + _plamo("get_time", '{"zone": "CET"}')
        + "<|plamo:end_tool_requests:plamo|>",
        "PLaMo 3; reader's example with <|plamo:constrain|>json<|plamo:msg|>, no <|plamo:tag|>",
    ),
    "pythonic-tag": Writing(
        '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
        '<|python_start|>[get_time(zone="CET")]<|python_end|>',
        '<|python_start|>[get_weather(city="Paris"), get_time(zone="CET")]<|python_end|>',
        "Llama 4 chat template (python_start); vLLM llama4_pythonic",
    ),
}


# Other writings real models of a family use: extra rows, "format/variant".
VARIANTS: dict[str, tuple[str, Writing]] = {
    "function-tag/bare": (
        "function-tag",
        _pair(
            "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
            "<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>",
            "\n",
            "Qwen3-Coder's XML without the <tool_call> wrapper (the reader's example shape)",
        ),
    ),
    "function-tag/json": (
        "function-tag",
        _pair(
            '<function=get_weather>{"city": "Paris"}</function>',
            '<function=get_time>{"zone": "CET"}</function>',
            "",
            "functionary v3.1 / Llama 3.1 <function=…>; llama.cpp common/chat.cpp",
        ),
    ),
    "mistral/v3": (
        "mistral",
        Writing(
            f"[TOOL_CALLS][{_JW}]",
            f"[TOOL_CALLS][{_JT}]",
            f"[TOOL_CALLS][{_JW}, {_JT}]",
            "Mistral 7B v0.3 / Nemo (tokenizer v3); vLLM mistral_tool_parser",
        ),
    ),
    "deepseek/v3": (
        "deepseek",
        Writing(
            _DS[0]
            + _DS[1]
            + "function"
            + _DS[2]
            + 'get_weather\n```json\n{"city": "Paris"}\n```'
            + _DS[3]
            + _DS[4],
            _DS[0]
            + _DS[1]
            + "function"
            + _DS[2]
            + 'get_time\n```json\n{"zone": "CET"}\n```'
            + _DS[3]
            + _DS[4],
            _DS[0]
            + _DS[1]
            + "function"
            + _DS[2]
            + 'get_weather\n```json\n{"city": "Paris"}\n```'
            + _DS[3]
            + _DS[1]
            + "function"
            + _DS[2]
            + 'get_time\n```json\n{"zone": "CET"}\n```'
            + _DS[3]
            + _DS[4],
            "DeepSeek-V3 / R1-0528 chat template; vLLM deepseekv3_tool_parser",
            "\n",
        ),
    ),  # the ```json fence needs its newlines: quoted "inline" on several lines
    "dsml/v4": (
        "dsml",
        Writing(
            f"<｜DSML｜tool_calls>\n{_invoke('DSML', 'get_weather', 'city', 'Paris')}\n"
            "</｜DSML｜tool_calls>",
            f"<｜DSML｜tool_calls>\n{_invoke('DSML', 'get_time', 'zone', 'CET')}\n"
            "</｜DSML｜tool_calls>",
            f"<｜DSML｜tool_calls>\n{_invoke('DSML', 'get_weather', 'city', 'Paris')}\n"
            f"{_invoke('DSML', 'get_time', 'zone', 'CET')}\n</｜DSML｜tool_calls>",
            "DeepSeek V4 DSML (<｜DSML｜tool_calls>); vLLM deepseekv4 parser",
        ),
    ),
    "plamo3/vllm": (
        "plamo3",
        Writing(
            "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
            "<|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>"
            '<|plamo:begin_tool_arguments:plamo|>{"city": "Paris"}<|plamo:end_tool_arguments:plamo|>'
            "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
            "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
            "<|plamo:begin_tool_name:plamo|>get_time<|plamo:end_tool_name:plamo|>"
            '<|plamo:begin_tool_arguments:plamo|>{"zone": "CET"}<|plamo:end_tool_arguments:plamo|>'
            "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
            "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
            "<|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>"
            '<|plamo:begin_tool_arguments:plamo|>{"city": "Paris"}<|plamo:end_tool_arguments:plamo|>'
            "<|plamo:end_tool_request:plamo|><|plamo:begin_tool_request:plamo|>"
            "<|plamo:begin_tool_name:plamo|>get_time<|plamo:end_tool_name:plamo|>"
            '<|plamo:begin_tool_arguments:plamo|>{"zone": "CET"}<|plamo:end_tool_arguments:plamo|>'
            "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
            "PLaMo 3 as vLLM plamo3_tool_parser's docstring (JSON straight in the arguments)",
        ),
    ),
}


def inline(writing: Writing, call: str) -> str:
    """The call collapsed onto one line, as one would quote it in a sentence."""
    return writing.inline_sep.join(line.strip() for line in call.splitlines())


def indent(call: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in call.splitlines())


# -------------------------------------------------------------------------- placements
@dataclass(frozen=True)
class Case:
    """A placement: ``build(w, t, both, wi, ti)`` → reply text. MADE cases expect
    ``expect`` read; SHOWN cases expect nothing to run."""

    name: str
    made: bool
    build: Callable[..., str]
    expect: tuple = (WEATHER,)


def M(name: str, build: Callable[..., str], expect: tuple = (WEATHER,)) -> Case:
    return Case(name, True, build, expect)


def S(name: str, build: Callable[..., str]) -> Case:
    return Case(name, False, build, ())


LOREM = (
    "Paris sits in the north of France, so spring can swing between mild sunny days and "
    "cold showers within the same week.",
    "Since you're packing for a three-day trip, the forecast matters more than the "
    "seasonal averages.",
    "I don't have live data in my head, so I'll ask the weather service directly.",
)

PLACEMENTS: list[Case] = [
    # ------------------------------------------------------------------- made
    M("alone", lambda w, t, b, wi, ti: w),
    M(
        "after sentence, same line",
        lambda w, t, b, wi, ti: f"Let me check the weather in Paris. {w}",
    ),
    M("after 'colon:' line", lambda w, t, b, wi, ti: f"I'll look up the current weather:\n{w}"),
    M("after several paragraphs", lambda w, t, b, wi, ti: "\n\n".join(LOREM) + f"\n\n{w}"),
    M("between two paragraphs", lambda w, t, b, wi, ti: f"{LOREM[0]}\n\n{w}\n\n{LOREM[1]}"),
    M(
        "between list items",
        lambda w, t, b, wi, ti: f"Plan:\n1. Check the weather.\n{w}\n2. Summarise.",
    ),
    M(
        "indented under list item",
        lambda w, t, b, wi, ti: (
            f"Plan:\n1. Check the weather in Paris.\n{indent(w, '   ')}\n2. Summarise the result."
        ),
    ),
    M("after markdown heading", lambda w, t, b, wi, ti: f"## Checking the weather\n\n{w}"),
    M("followed by a sentence", lambda w, t, b, wi, ti: f"{w}\nI'll report back once I have it."),
    M(
        "two calls, sentence between",
        lambda w, t, b, wi, ti: f"First, the weather.\n{w}\nThen the local time.\n{t}",
        (WEATHER, TIME),
    ),
    M("two calls back to back", lambda w, t, b, wi, ti: b, (WEATHER, TIME)),
    M("after Chinese sentence", lambda w, t, b, wi, ti: f"好的，我来查一下巴黎的天气。\n{w}"),
    M("after Chinese colon, same line", lambda w, t, b, wi, ti: f"我先查询天气：{w}"),
    M("followed by Chinese remark", lambda w, t, b, wi, ti: f"{w}\n稍等，查到结果后告诉你。"),
    M(
        "after <think> reasoning",
        lambda w, t, b, wi, ti: (
            "<think>\nThe user wants the weather in Paris. I should call "
            f"get_weather with city=Paris.\n</think>\n\n{w}"
        ),
    ),
    M("after bold line", lambda w, t, b, wi, ti: f"**Checking the weather now.**\n\n{w}"),
    M("after line ending with …", lambda w, t, b, wi, ti: f"Let me check that for you…\n{w}"),
    M(
        "after an earlier code block",
        lambda w, t, b, wi, ti: (
            "Here is the script you asked for:\n\n```python\n"
            "print('hello')\n```\n\nNow let me check the weather.\n" + w
        ),
    ),
    M(
        "after quoting the user",
        lambda w, t, b, wi, ti: f"> What's the weather in Paris?\n\nSure, checking now.\n{w}",
    ),
    # ------------------------------------------------------------------ shown
    S("bullet '- '", lambda w, t, b, wi, ti: f"The model's calls look like:\n\n- {wi}\n- {ti}"),
    S("bullet '* '", lambda w, t, b, wi, ti: f"Two example calls:\n* {wi}\n* {ti}"),
    S("bullet '+ '", lambda w, t, b, wi, ti: f"Examples:\n+ {wi}\n+ {ti}"),
    S(
        "bullet, words before call",
        lambda w, t, b, wi, ti: f"- To ask for the weather, write {wi}\n- For the time: {ti}",
    ),
    S(
        "bullet 'Example:'",
        lambda w, t, b, wi, ti: f"Syntax notes:\n* Example: {wi}\n* Arguments are JSON.",
    ),
    S(
        "numbered '1. '",
        lambda w, t, b, wi, ti: f"The model can emit calls like these:\n1. {wi}\n2. {ti}",
    ),
    S("numbered '2) '", lambda w, t, b, wi, ti: f"Two forms exist:\n1) plain text\n2) {wi}"),
    S("numbered '1、'", lambda w, t, b, wi, ti: f"调用格式如下：\n1、{wi}\n2、{ti}"),
    S(
        "nested list",
        lambda w, t, b, wi, ti: f"- Call formats\n  - Weather: {wi}\n  - Time: {ti}\n- Results",
    ),
    S("blockquote, one line", lambda w, t, b, wi, ti: f"The docs put it like this:\n\n> {wi}"),
    S(
        "blockquote, multi-line",
        lambda w, t, b, wi, ti: (
            f"> A call looks like this:\n>\n{indent(w, '> ')}\n>\n> and the server parses it."
        ),
    ),
    S("nested blockquote '>>'", lambda w, t, b, wi, ti: f"> The model card says:\n>> {wi}"),
    S(
        '"double quotes"',
        lambda w, t, b, wi, ti: f'The model replies with "{wi}" when it wants the weather.',
    ),
    S("'single quotes'", lambda w, t, b, wi, ti: f"Write '{wi}' to ask for the weather."),
    S("“curly double”", lambda w, t, b, wi, ti: f"It answers with “{wi}” and then stops."),
    S("‘curly single’", lambda w, t, b, wi, ti: f"A reply such as ‘{wi}’ asks for a tool."),
    S("「Chinese corner」", lambda w, t, b, wi, ti: f"模型会输出「{wi}」来调用天气工具。"),
    S(
        "“Chinese curly” in sentence",
        lambda w, t, b, wi, ti: f"比如模型写出“{wi}”，服务器就会把它解析成一次工具调用。",
    ),
    S(
        "«French guillemets»",
        lambda w, t, b, wi, ti: f"Le modèle écrit « {wi} » pour appeler l'outil météo.",
    ),
    S("inline backticks", lambda w, t, b, wi, ti: f"Use `{wi}` to call get_weather."),
    S("fenced, no language", lambda w, t, b, wi, ti: f"A call looks like this:\n\n```\n{w}\n```"),
    S("fenced ```xml", lambda w, t, b, wi, ti: f"Here is the raw output:\n\n```xml\n{w}\n```"),
    S(
        "fenced ```text",
        lambda w, t, b, wi, ti: f"The template renders a call as:\n```text\n{w}\n```\n",
    ),
    S("fenced, tilde ~~~", lambda w, t, b, wi, ti: f"Raw model output:\n\n~~~\n{w}\n~~~"),
    S(
        "fenced in list item",
        lambda w, t, b, wi, ti: (
            "1. Write the call:\n   ```\n"
            + indent(w, "   ")
            + "\n   ```\n2. Send it to the server."
        ),
    ),
    S(
        "indented code block (4 spaces)",
        lambda w, t, b, wi, ti: f"The syntax is:\n\n{indent(w, '    ')}\n\nThat's all.",
    ),
    S(
        "doc answer: heading + fence",
        lambda w, t, b, wi, ti: (
            "### Syntax\n\nTo call `get_weather`, the model writes:\n\n"
            f"```\n{w}\n```\n\nThe server turns it into a tool call."
        ),
    ),
    S(
        "Chinese doc + fence",
        lambda w, t, b, wi, ti: f"工具调用的格式是：\n\n```\n{w}\n```\n\n服务器会解析它。",
    ),
    S("'For example:' line before", lambda w, t, b, wi, ti: f"For example:\n{w}"),
    S(
        "'e.g.' mid-sentence",
        lambda w, t, b, wi, ti: f"Calls use special markers, e.g. {wi}, so they are easy to spot.",
    ),
    S(
        "'such as' mid-sentence",
        lambda w, t, b, wi, ti: f"A reply may contain a call such as {wi} followed by text.",
    ),
    S("'例如：'", lambda w, t, b, wi, ti: f"例如：{wi}"),
    S(
        "table cell",
        lambda w, t, b, wi, ti: f"| Kind | Syntax |\n|---|---|\n| call | {wi} |\n| time | {ti} |",
    ),
    S(
        "markdown link text",
        lambda w, t, b, wi, ti: f"See [{wi}](https://example.com/docs) for details.",
    ),
    S("HTML <code>", lambda w, t, b, wi, ti: f"The call is <code>{wi}</code> in raw output."),
    S("HTML <pre>", lambda w, t, b, wi, ti: f"<pre>\n{w}\n</pre>"),
    S(
        "call then prose explaining it",
        lambda w, t, b, wi, ti: f"{w}\nThat is the format the model uses to call a tool.",
    ),
    S(
        "'looks like this:' then explanation",
        lambda w, t, b, wi, ti: (
            f"A tool call looks like this:\n{w}\nHere get_weather is the "
            "tool's name and city its argument."
        ),
    ),
]


def public_placements() -> list[Case]:
    """The placements of ``bench/placements_public.py`` (judged before they were run)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from placements_public import PUBLIC

    def build(template: str) -> Callable[..., str]:
        return lambda w, t, b, wi, ti: template.format(w=w, t=t, b=b, wi=wi, ti=ti)

    return [Case(name, kind == "made", build(text), calls) for name, kind, text, calls in PUBLIC]


# ----------------------------------------------------------------------------- reading
def _calls(msg) -> list[tuple[str, dict]]:
    return [(c["name"], c["args"]) for c in msg.tool_calls]


AUTO = False  # --auto: nothing declared, the format detected (a thread's first reply)


def read_normalize(fmt: str, text: str) -> list[tuple[str, dict]]:
    known = None if AUTO else fmt
    return _calls(normalize(AIMessage(text), None, call_format=known, tool_names=TOOL_NAMES))


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return "sunny"


@tool
def get_time(zone: str) -> str:
    """Time in a zone."""
    return "12:00"


def read_dialect(fmt: str, text: str) -> tuple[list, list]:
    """(invoke, stream) through with_dialect over a replay of ``text``."""
    from fncall_graph.adapters import with_dialect
    from fncall_graph.replay import ReplayChatModel

    model = with_dialect(
        ReplayChatModel([text, text], chunk_size=7), "native", call_format=None if AUTO else fmt
    ).bind_tools([get_weather, get_time])
    invoked = _calls(model.invoke("Weather in Paris?"))
    full = None
    for chunk in model.stream("Weather in Paris?"):
        full = chunk if full is None else full + chunk
    return invoked, (_calls(full) if full is not None else [])


def _err(exc: Exception) -> list:
    return [("ERROR", {"error": f"{type(exc).__name__}: {exc}"[:200]})]


# -------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print every miss")
    ap.add_argument(
        "--stream", action="store_true", help="also read through with_dialect: invoke vs stream"
    )
    ap.add_argument("--formats", default="", help="comma-separated subset of formats")
    ap.add_argument("--auto", action="store_true", help="declare no format: detect it")
    ap.add_argument(
        "--set",
        choices=("repo", "public"),
        default="repo",
        help="placements: this file's (repo) or bench/placements_public.py's (public)",
    )
    args = ap.parse_args()
    global AUTO
    AUTO = args.auto
    placements = PLACEMENTS if args.set == "repo" else public_placements()

    formats = sorted(f for f in CALL_FORMATS if f not in SKIPPED)
    missing = [f for f in formats if f not in FORMATS]
    unknown = [f for f in FORMATS if f not in CALL_FORMATS]
    formats = [f for f in formats if f in FORMATS]
    if args.formats:
        wanted = args.formats.split(",")
        formats = [f for f in formats if f in wanted]
    # rows: label -> (call format, writing); variants after their format's main writing
    rows: dict[str, tuple[str, Writing]] = {}
    for f in formats:
        rows[f] = (f, FORMATS[f])
        rows.update({k: v for k, v in VARIANTS.items() if v[0] == f})
    for f, why in SKIPPED.items():
        print(f"skipped {f}: {why}")
    if missing:
        print(f"no writing for: {', '.join(missing)}")
    if unknown:
        print(f"written but not in CALL_FORMATS: {', '.join(unknown)}")

    # Every writing must read alone (and inline) or the placements measure nothing.
    print("\nself-check (each writing read alone by normalize):")
    bad = 0
    for row, (f, wr) in rows.items():
        for label, text, want in (
            ("w", wr.w, [WEATHER]),
            ("t", wr.t, [TIME]),
            ("both", wr.both, [WEATHER, TIME]),
            ("w inline", inline(wr, wr.w), [WEATHER]),
        ):
            try:
                got = read_normalize(f, text)
            except Exception as exc:
                got = _err(exc)
            if got != want:
                bad += 1
                print(f"  {row:17} {label:9} NOT READ ALONE: got {got}")
    print(f"  {bad} writing(s) not read alone" if bad else "  all writings read alone")

    t0 = time.perf_counter()
    results: dict[tuple[str, str], bool] = {}  # (placement, fmt) -> ok
    misses: list[str] = []
    disagree: list[str] = []
    n_dialect = 0
    norm_vs_invoke: list[str] = []
    for case in placements:
        for row, (f, wr) in rows.items():
            text = case.build(wr.w, wr.t, wr.both, inline(wr, wr.w), inline(wr, wr.t))
            try:
                got = read_normalize(f, text)
            except Exception as exc:
                got = _err(exc)
            ok = got == list(case.expect) if case.made else not got
            results[(case.name, row)] = ok
            if not ok:
                kind = "MADE not read" if case.made else "SHOWN ran"
                misses.append(f"[{kind}] {row} / {case.name}: got {got}\n    {text!r}")
            if args.stream:
                n_dialect += 1
                try:
                    invoked, streamed = read_dialect(f, text)
                except Exception as exc:
                    invoked, streamed = _err(exc), []
                if invoked != streamed:
                    disagree.append(
                        f"{row} / {case.name}: invoke {invoked} vs stream {streamed}\n    {text!r}"
                    )
                if invoked != got:
                    norm_vs_invoke.append(
                        f"{row} / {case.name}: normalize {got} vs invoke {invoked}"
                    )
    elapsed = time.perf_counter() - t0

    formats = list(rows)  # the table's rows: formats and their variants
    nf = len(formats)
    made = [c for c in placements if c.made]
    shown = [c for c in placements if not c.made]
    print(
        f"\n{len(made)} made and {len(shown)} shown placements × {nf} writings "
        f"({len(rows) - len(VARIANTS & rows.keys())} formats + variants) "
        f"({elapsed:.1f} s)\n"
    )
    w = max(len(c.name) for c in placements) + 2
    print(f"{'placement':{w}} {'kind':6} {'read':>7} {'ran':>7}   (out of {nf} writings)")
    for c in placements:
        ok = sum(results[(c.name, f)] for f in formats)
        if c.made:
            print(f"{c.name:{w}} {'made':6} {f'{ok}/{nf}':>7} {'':>7}")
        else:
            print(f"{c.name:{w}} {'shown':6} {'':>7} {f'{nf - ok}/{nf}':>7}")

    print(f"\n{'format':18} {'made read':>10} {'shown ran':>10}   source of the writing")
    tot_read = tot_ran = 0
    for f in formats:
        r = sum(results[(c.name, f)] for c in made)
        ran = sum(not results[(c.name, f)] for c in shown)
        tot_read += r
        tot_ran += ran
        print(f"{f:18} {f'{r}/{len(made)}':>10} {f'{ran}/{len(shown)}':>10}   {rows[f][1].source}")
    nm, ns = len(made) * nf, len(shown) * nf
    print(f"{'TOTAL':18} {f'{tot_read}/{nm}':>10} {f'{tot_ran}/{ns}':>10}")
    print(
        f"\nmade calls read: {tot_read}/{nm} ({100 * tot_read / nm:.1f}%)   "
        f"shown calls ran: {tot_ran}/{ns} ({100 * tot_ran / ns:.1f}%)"
    )

    if args.stream:
        print(
            f"\nwith_dialect invoke vs stream (chunk_size=7): {len(disagree)} disagreement(s) "
            f"out of {n_dialect}"
        )
        for d in disagree[:5]:
            print("  " + d)
        print(f"normalize vs with_dialect invoke: {len(norm_vs_invoke)} disagreement(s)")
        for d in norm_vs_invoke[:5]:
            print("  " + d)
    if args.verbose:
        print(f"\nmisses ({len(misses)}):")
        for m in misses:
            print("  " + m)


if __name__ == "__main__":
    sys.exit(main())
