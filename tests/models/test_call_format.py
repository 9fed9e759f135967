"""A model's call format, known before its reply is read.

The family table (every row, names with organisations, registries and quantisation tags),
the chat-template markers, the order of the sources (declared beats the server beats the
name), the cache (one question per model and process), and a thread that learns its
format from its first call and reads the next reply with it.

The Ollama tests are contract tests: no Ollama binary runs here; the real ``ollama``
client (inside ``ChatOllama``) talks over loopback to ``tests/servers/ollama_stub.py``,
whose ``/api/show`` answers with the body Ollama's API documentation gives, here with
the ``template`` of the model asked for. The llama.cpp tests start the bundled server.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from servers.ollama_stub import OllamaStub

from fncall_graph.adapters.formats.chat_templates import TEMPLATE_MARKERS, format_of_template
from fncall_graph.adapters.formats.readers import CALL_FORMATS
from fncall_graph.adapters.models import CompatibleChatOpenAI, ModelSpecError, resolve_model
from fncall_graph.adapters.models import model_call as pipeline_module
from fncall_graph.adapters.models.call_format import (
    FAMILIES,
    CallFormat,
    chat_template_of_file,
    forget_call_formats,
    format_of_name,
    resolve_call_format,
)
from fncall_graph.adapters.models.chat_model import with_dialect
from fncall_graph.graphs import create_fncall_graph
from fncall_graph.replay import ReplayChatModel
from fncall_graph.trace import Tracer


@pytest.fixture(autouse=True)
def fresh_cache():
    forget_call_formats()
    yield
    forget_call_formats()


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"{city}: sunny"


# ------------------------------------------------------------------------ the family table

# one model name per row of FAMILIES, as people write them: HF ids, Ollama tags, GGUF files
NAMES = {
    "Hermes 2 Pro / 3 / 4": "NousResearch/Hermes-3-Llama-3.1-8B",
    "xLAM": "Salesforce/Llama-xLAM-2-8b-fc-r",
    "ToolACE": "Team-ACE/ToolACE-8B",
    "Functionary v3.2": "meetkai/functionary-small-v3.2",
    "FireFunction v2": "fireworks-ai/llama-3-firefunction-v2",
    "DeepSeek V3.2 / V4": "deepseek-ai/DeepSeek-V3.2-Exp",
    "DeepSeek V3 / V3.1 / R1": "deepseek-r1:7b",
    "Qwen3-Coder": "Qwen/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M",
    "Qwen3.5 and later": "Qwen/Qwen3.5-35B-A3B",
    "Qwen2.5 / Qwen3 / QwQ": "qwen3:30b-a3b",
    "GLM-4.5 / 4.6 / 4.7": "zai-org/GLM-4.7-Flash",
    "Magistral / Devstral / Ministral / Mistral / Mixtral / Codestral": (
        "mistralai/Devstral-Small-2507"
    ),
    "Llama 4": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "Llama 3.1 / 3.2 / 3.3": "hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M",
    "FunctionGemma": "google/functiongemma-270m-it",
    "Gemma 4": "gemma4:12b",
    "LFM2 / LFM2.5": "LiquidAI/LFM2-1.2B-Tool",
    "Kimi K3": "moonshotai/Kimi-K3",
    "Kimi K2": "moonshotai/Kimi-K2-Instruct-0905",
    "MiniMax-M2 / M3": "MiniMaxAI/MiniMax-M2.1",
    "MiniMax-M1": "MiniMaxAI/MiniMax-M1-80k",
    "gpt-oss": "registry.ollama.ai/library/gpt-oss:20b",
    "Granite 20B function calling": "ibm-granite/granite-20b-functioncalling",
    "Granite 4": "granite4:tiny-h",
    "Granite 3.x": "ibm-granite/granite-3.1-8b-instruct",
    "Hunyuan A13B": "tencent/Hunyuan-A13B-Instruct",
    "Step-3.5": "stepfun-ai/Step-3.5-Flash",
    "Step-3": "stepfun-ai/step3",
    "Nemotron 3 Nano": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "Nemotron Nano v2 / Super": "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
    "OLMo 3": "allenai/Olmo-3-7B-Instruct",
    "Seed-OSS": "ByteDance-Seed/Seed-OSS-36B-Instruct",
    "Phi-4-mini": "microsoft/Phi-4-mini-instruct",
    "InternLM 2 / 2.5": "internlm/internlm2_5-7b-chat",
    "Command R7B / A": "CohereLabs/c4ai-command-r7b-12-2024",
    "Jamba 1.5": "ai21labs/AI21-Jamba-1.5-Mini",
    "Apertus": "swiss-ai/Apertus-8B-Instruct-2509",
    "LongCat-Flash": "meituan-longcat/LongCat-Flash-Chat-FP8",
    "GigaChat 3.5": "GigaChat3.5",
    "GigaChat 3.1": "ai-sage/GigaChat3.1-10B-A1.8B",
    "GigaChat 3": "ai-sage/GigaChat3-10B-A1.8B",
    "PLaMo 3": "pfnet/plamo-3-nict-31b-base",
}


def test_every_row_of_the_table_has_a_name_that_finds_it():
    assert sorted(NAMES) == sorted(f.family for f in FAMILIES)
    found = {family: format_of_name(name) for family, name in NAMES.items()}
    assert {k: (v.family if v else None) for k, v in found.items()} == {k: k for k in NAMES}


def test_every_row_names_a_format_the_readers_know_and_says_where_it_came_from():
    assert [f.family for f in FAMILIES if f.format not in CALL_FORMATS] == []
    assert [f.family for f in FAMILIES if not f.source] == []


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M", "hermes"),
        ("hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:UD-Q4_K_XL", "hermes"),
        ("qwen2.5-coder:7b-instruct-q4_K_M", "hermes"),
        ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "hermes"),
        ("unsloth/GLM-4.5-Air-GGUF", "hermes"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek"),
        ("deepseek-v4:671b", "dsml"),
        ("mistralai/Magistral-Small-2509", "mistral"),
        ("mistral-small3.2:24b", "mistral"),
        ("llama3.2:3b", "json"),
        ("meta-llama/Llama-3.3-70B-Instruct", "json"),
        ("llama-3_2-1b-instruct", "json"),
        ("llama4:scout", "pythonic"),
        ("hf.co/unsloth/gemma-4-12b-it-GGUF:Q8_0", "gemma4"),
        ("gpt-oss-120b", "harmony"),
        ("kimi-k2-thinking", "kimi"),
        ("MiniMax-M3", "minimax"),
        ("lfm2.5-1.2b-instruct", "lfm2"),
        # names of llama.cpp's models/templates files
        ("glm_4_5", "hermes"),
        ("nvidia-Llama-3_3-Nemotron-Super-49B-v1_5", "nemotron"),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek"),
        ("llama-cpp-microsoft-Phi-4-mini-instruct", "functools"),
        ("google-gemma-4-31B-it-interleaved", "gemma4"),
    ],
)
def test_names_with_organisations_registries_and_quantisation_tags(name, fmt):
    assert format_of_name(name).format == fmt


@pytest.mark.parametrize(
    "name",
    [
        "smollm2-135m-instruct",
        "gpt-4o-mini",
        "phi3:mini",
        "THUDM/glm-4-9b-chat",
        "meta-llama/Meta-Llama-3-8B-Instruct",  # Llama 3.0: no tool calls
        "llama3:8b",
        "",
        None,
    ],
)
def test_a_name_no_family_claims_says_nothing(name):
    assert format_of_name(name) is None


# ------------------------------------------------------------------ the template markers


@pytest.mark.parametrize(("markers", "fmt"), TEMPLATE_MARKERS, ids=lambda v: str(v)[:30])
def test_every_marker_row_is_reached(markers, fmt):
    # a template with only this row's markers, in a plain ChatML frame
    template = "{{ '<|im_start|>' + m.role }}" + "".join(f"{{{{ '{m}' }}}}" for m in markers)
    assert format_of_template(template) == fmt


def test_templates_of_real_families():
    qwen3_coder = (
        "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"
        "{{- '<parameter=' + args_name + '>\\n' }}"
    )
    glm = "{{ '<tool_call>' + tc.name }}{% for k, v in args %}<arg_key>{{ k }}</arg_key>"
    llama31 = "<|start_header_id|>ipython<|end_header_id|>\n\n{{ '<|python_tag|>' }}"
    assert format_of_template(qwen3_coder) == "hermes"
    assert format_of_template(glm) == "hermes"
    assert format_of_template(llama31) == "json"
    assert format_of_template("{{ '<|channel|>commentary to=functions.' }}") == "harmony"
    assert format_of_template("{{ .Prompt }}") is None
    assert format_of_template(None) is None


def test_the_bundled_gguf_template_has_no_tool_markers():
    from fncall_graph.adapters.models.local_server import DEFAULT_CHAT_TEMPLATE, bundled_gguf_path

    template = chat_template_of_file(bundled_gguf_path())
    assert template is not None and "<|im_start|>" in template  # read from the real file
    assert format_of_template(template) is None  # SmolLM2's ChatML knows no tools
    assert format_of_template(DEFAULT_CHAT_TEMPLATE) == "hermes"  # what the server serves


def test_a_local_tokenizer_config_tells_the_format(tmp_path: Path):
    folder = tmp_path / "Some-Finetune"
    folder.mkdir()
    template = "{{ '[TOOL_CALLS]' }}{{ calls | tojson }}"
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    # nothing listens at the base URL: the server says nothing, the file does
    model = CompatibleChatOpenAI(
        model="my-finetune",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-none",
        model_path=str(folder),
    )
    found = resolve_call_format(model)
    assert (found.name, found.source) == ("mistral", "server")
    assert "tokenizer_config.json" in found.detail


# ----------------------------------------------------------------------- the order, cached


class TemplatedOllama(OllamaStub):
    """The contract server, whose ``/api/show`` gives each model's own ``template``."""

    def __init__(
        self, templates: dict[str, str], parsers: dict[str, str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.templates = templates
        self.parsers = parsers or {}

    def _show(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, shown = super()._show(body)
        name = str(body.get("model", "")).split(":")[0]
        shown = {**shown, "template": self.templates.get(name, "{{ .Prompt }}")}
        if (
            name in self.parsers
        ):  # a model Ollama renders and parses itself (ollama show --modelfile)
            parser = self.parsers[name]
            shown["modelfile"] += f"RENDERER {parser}\nPARSER {parser}\n"
        return status, shown

    def shows(self) -> int:
        return sum(1 for _, path, _ in self.requests if path == "/api/show")


MISTRAL_TEMPLATE = '{{- range .ToolCalls }}[TOOL_CALLS] [{"name": "{{ .Function.Name }}"'
QWEN3_TEMPLATE = '{{- range .ToolCalls }}<tool_call>\n{"name": "{{ .Function.Name }}"'


@pytest.fixture
def ollama():
    templates = {"my-tune": MISTRAL_TEMPLATE, "qwen3": MISTRAL_TEMPLATE, "plain": "{{ .Prompt }}"}
    parsers = {"qwen3-coder": "qwen3-coder", "gpt-oss": "harmony", "odd": "no-such-parser"}
    with TemplatedOllama(templates, parsers) as server:
        yield server


def test_ollama_show_tells_the_format_once_per_model(ollama):
    model = resolve_model("ollama:my-tune", base_url=ollama.url)
    for _ in range(3):
        found = resolve_call_format(model)
        assert found == CallFormat("mistral", "server", "Ollama POST /api/show template")
    # another instance of the same model: the process asked once
    assert resolve_call_format(resolve_model("ollama:my-tune", base_url=ollama.url)) == found
    assert ollama.shows() == 1
    assert [b for _, p, b in ollama.requests if p == "/api/show"] == [{"model": "my-tune"}]


def test_ollama_s_own_parser_tells_the_format(ollama):
    found = resolve_call_format(resolve_model("ollama:qwen3-coder:30b", base_url=ollama.url))
    assert found == CallFormat(
        "hermes", "server", "Ollama POST /api/show modelfile PARSER qwen3-coder"
    )
    harmony = resolve_call_format(resolve_model("ollama:gpt-oss:20b", base_url=ollama.url))
    assert (harmony.name, harmony.source) == ("harmony", "server")
    # a parser not known here says nothing: the template, then the name, are asked
    assert resolve_call_format(resolve_model("ollama:odd", base_url=ollama.url)).source == "unknown"


def test_the_server_beats_the_name(ollama):
    # named like a Qwen3 (hermes by name), served with a Mistral template
    found = resolve_call_format(resolve_model("ollama:qwen3", base_url=ollama.url))
    assert (found.name, found.source) == ("mistral", "server")


def test_the_name_when_the_server_says_nothing(ollama):
    found = resolve_call_format(resolve_model("ollama:gpt-oss-tune:20b", base_url=ollama.url))
    assert (found.name, found.source) == ("harmony", "name")
    assert "gpt-oss" in found.detail and "vLLM" in found.detail
    assert ollama.shows() == 1


def test_nothing_known_is_said_so_and_asked_once(ollama):
    model = resolve_model("ollama:plain", base_url=ollama.url)
    assert resolve_call_format(model).source == "unknown"
    assert resolve_call_format(model).name is None
    assert ollama.shows() == 1


def test_forgetting_asks_again_and_the_cache_keeps_no_model_alive(ollama):
    model = resolve_model("ollama:my-tune", base_url=ollama.url)
    first = resolve_call_format(model)
    assert resolve_call_format(model) is first
    forget_call_formats()  # the server now serves another model
    assert resolve_call_format(model) == first
    assert ollama.shows() == 2
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None


def test_declared_beats_the_server_and_asks_nothing(ollama):
    spec = resolve_model("ollama:my-tune?format=kimi", base_url=ollama.url)
    assert resolve_call_format(spec) == CallFormat("kimi", "declared", "spec")
    # declared to the caller beats the spec's; a family's name stands for its format
    model = resolve_model("ollama:my-tune", base_url=ollama.url)
    declared = resolve_call_format(model, declared="glm-4.5")
    assert (declared.name, declared.source) == ("hermes", "declared")
    assert ollama.shows() == 0
    # and a prompt dialect the caller renders beats all
    assert resolve_call_format(spec, dialect="qwen").name == "qwen"


def test_a_graph_asks_once_for_all_its_calls_and_threads(ollama):
    model = resolve_model("ollama:my-tune", base_url=ollama.url)
    graph = create_fncall_graph(model, [get_weather], checkpointer=InMemorySaver())
    for thread in ("a", "b"):
        ollama.reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
        ollama.reply("Sunny in Paris.")
        config = {"configurable": {"thread_id": thread}}
        state = graph.invoke({"messages": [("user", "Weather in Paris?")]}, config)
        assert state["messages"][-1].content == "Sunny in Paris."
        assert (state["call_format"], state["call_format_source"]) == ("mistral", "server")
    assert len(ollama.chat_requests()) == 4
    assert ollama.shows() == 1


def test_bad_declarations_are_refused_saying_where():
    with pytest.raises(ModelSpecError, match=r"\?format=: unknown call format 'nope'"):
        resolve_model("ollama:my-tune?format=nope")
    with pytest.raises(ValueError, match="call_format: unknown call format 'nope'"):
        create_fncall_graph(ReplayChatModel(["hi"]), [get_weather], call_format="nope")
    with pytest.raises(ValueError, match="unknown call format"):
        with_dialect(ReplayChatModel(["hi"]), "native", call_format="nope")


def test_spec_options_keep_their_other_options():
    url = resolve_model("http://127.0.0.1:8000/v1#Qwen3-Coder-30B?format=qwen3-coder")
    assert (url.model_name, url.openai_api_base) == ("Qwen3-Coder-30B", "http://127.0.0.1:8000/v1")
    assert url.metadata["fncall_call_format"] == "hermes"
    bare = resolve_model("http://127.0.0.1:8000/v1?format=harmony")
    assert (bare.model_name, bare.openai_api_base) == ("default", "http://127.0.0.1:8000/v1")
    assert resolve_call_format(bare).name == "harmony"


# ------------------------------------------------------------ a thread learns its format


MISTRAL_CALL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'


@pytest.fixture
def reads(monkeypatch):
    """The ``call_format`` each native reply was read with (the model boundary's reading)."""
    seen: list[str | None] = []
    real = pipeline_module.normalize

    def spy(*args: Any, **kwargs: Any) -> AIMessage:
        if args[1] is None:  # a native reply
            seen.append(kwargs.get("call_format"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "normalize", spy)
    return seen


def test_a_thread_learns_its_format_from_its_first_call_and_reads_with_it(reads):
    # a native model whose server has no tool parser, and whose format nothing tells
    model = ReplayChatModel([MISTRAL_CALL, "Sunny.", MISTRAL_CALL, "Still sunny."])
    graph = create_fncall_graph(model, [get_weather], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [("user", "Weather in Paris?")]}, config)
    assert first["messages"][1].tool_calls[0]["args"] == {"city": "Paris"}
    assert first["dialect"] == "native"
    assert (first["call_format"], first["call_format_source"]) == ("mistral", "learned")
    assert reads[0] is None  # the first reply: every format was looked for
    assert reads[1:] == ["mistral"]  # the answer after the tool result: read as mistral
    second = graph.invoke({"messages": [("user", "And now?")]}, config)
    assert second["messages"][-3].tool_calls[0]["name"] == "get_weather"
    assert reads[2:] == ["mistral", "mistral"]
    assert (second["call_format"], second["call_format_source"]) == ("mistral", "learned")
    # another thread learns for itself
    other = graph.get_state({"configurable": {"thread_id": "u"}}).values
    assert "call_format" not in other


async def test_an_async_thread_learns_its_format_too(reads):
    model = ReplayChatModel([MISTRAL_CALL, "Sunny."])
    graph = create_fncall_graph(model, [get_weather])
    state = await graph.ainvoke({"messages": [("user", "Weather in Paris?")]})
    assert (state["call_format"], state["call_format_source"]) == ("mistral", "learned")
    assert reads == [None, "mistral"]


def test_a_glm_call_switches_a_native_thread_to_hermes_and_records_it():
    glm = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    model = ReplayChatModel([glm, "Sunny."])
    graph = create_fncall_graph(model, [get_weather], checkpointer=InMemorySaver())
    state = graph.invoke(
        {"messages": [("user", "Weather in Paris?")]}, {"configurable": {"thread_id": "g"}}
    )
    assert state["messages"][1].tool_calls[0]["args"] == {"city": "Paris"}
    assert state["dialect"] == "hermes"
    assert (state["call_format"], state["call_format_source"]) == ("hermes", "dialect")


def test_a_declared_format_is_read_with_from_the_first_reply(reads):
    model = ReplayChatModel([MISTRAL_CALL, "Sunny."])
    graph = create_fncall_graph(model, [get_weather], call_format="mistral")
    state = graph.invoke({"messages": [("user", "Weather in Paris?")]})
    assert reads == ["mistral", "mistral"]
    assert (state["call_format"], state["call_format_source"]) == ("mistral", "declared")


def test_with_dialect_reads_with_the_declared_format(reads):
    model = with_dialect(ReplayChatModel([MISTRAL_CALL]), "native", call_format="devstral")
    reply = model.bind_tools([get_weather]).invoke("Weather in Paris?")
    assert reply.tool_calls[0]["name"] == "get_weather"
    assert reads == ["mistral"]


def test_the_trace_records_the_format_each_reply_was_read_in():
    model = ReplayChatModel([MISTRAL_CALL, "Sunny."])
    graph = create_fncall_graph(model, [get_weather])
    tracer = Tracer()
    tracer.start_round("Weather in Paris?")
    for mode, chunk in graph.stream(
        {"messages": [("user", "Weather in Paris?")]},
        {"callbacks": [tracer.recorder]},
        stream_mode=["updates", "values"],
    ):
        tracer.feed(mode, chunk)
    formats = [(r.call_format, r.call_format_source) for r in tracer.records]
    assert formats == [("mistral", "learned"), ("mistral", "learned")]
    assert tracer.records[0].to_dict()["call_format"] == "mistral"


# ------------------------------------------------------------------ the bundled llama.cpp


@pytest.fixture(scope="module")
def llamacpp():
    pytest.importorskip("xllamacpp")
    from fncall_graph.adapters.models.local_server import LocalModelServer

    with LocalModelServer() as server:
        yield server


def test_llamacpp_props_tells_the_format(llamacpp):
    model = llamacpp.chat_model()
    found = resolve_call_format(model, dialect="native")
    # the served template (the Hermes tool block), not the GGUF's own (plain ChatML)
    assert found == CallFormat("hermes", "server", "llama.cpp GET /props chat_template")
    # the bundled model speaks hermes in a graph: that dialect's own format, as before
    assert resolve_call_format(model, dialect="hermes").source == "dialect"


# ------------------------------------------------------------------------ docs and the CLI


def test_the_docs_table_has_every_family_with_its_format():
    page = Path(__file__).resolve().parents[2] / "docs" / "dialects.md"
    cells = [line.split("|") for line in page.read_text(encoding="utf-8").splitlines()]
    rows = {c[1].strip(): c[2].strip() for c in cells if len(c) > 3}
    assert {f.family: rows.get(f.family) for f in FAMILIES} == {
        f.family: f"`{f.format}`" for f in FAMILIES
    }


def test_the_cli_refuses_an_unknown_call_format(capsys):
    from fncall_graph.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "replay:weather", "--call-format", "nope", "hi"])
    assert exit_.value.code == 1
    assert "--call-format: unknown call format 'nope'" in capsys.readouterr().err


def test_the_prompt_command_says_the_format_of_a_model(weather_http, tmp_path, capsys):
    from fncall_graph.cli import main

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"weather": {"url": weather_http}}}))
    argv = ["prompt", "--dialect", "native", "--mcp", str(config)]
    assert main([*argv, "--model", "ollama:my-tune?format=glm-4.5"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["function"]["name"] == "weather-get_weather"  # as before
    assert "call format hermes (declared: spec)" in out.err
