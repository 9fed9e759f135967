"""Model specs (`resolve_model`) and recognising "this model cannot take tools"."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from fncall_graph.adapters.models import (
    CompatibleChatOpenAI,
    ModelSpecError,
    is_tools_unsupported_error,
    resolve_model,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FNCALL_MODEL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


# -- resolve_model: the specs ---------------------------------------------------------


def test_ready_model_is_returned_as_is():
    model = FakeListChatModel(responses=["x"])
    assert resolve_model(model) is model


def test_ollama_spec():
    model = resolve_model("ollama:qwen3:8b", base_url="http://127.0.0.1:11434", temperature=0)
    assert isinstance(model, ChatOllama)
    assert model.model == "qwen3:8b"
    assert model.base_url == "http://127.0.0.1:11434"
    assert model.temperature == 0


def test_openai_spec_with_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = resolve_model("openai:gpt-4o-mini")
    assert type(model) is ChatOpenAI
    assert model.model_name == "gpt-4o-mini"
    assert model.openai_api_key.get_secret_value() == "sk-test"


def test_openai_spec_with_base_url_and_no_key_uses_dummy_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    model = resolve_model("openai:Qwen/Qwen2.5-7B-Instruct")
    assert isinstance(model, CompatibleChatOpenAI)
    assert model.openai_api_base == "http://127.0.0.1:8000/v1"
    assert model.openai_api_key.get_secret_value()


def test_base_url_spec_with_and_without_name():
    model = resolve_model("http://127.0.0.1:8000/v1#deepseek-chat")
    assert isinstance(model, CompatibleChatOpenAI)
    assert model.model_name == "deepseek-chat"
    assert model.openai_api_base == "http://127.0.0.1:8000/v1"
    assert resolve_model("http://localhost:8080/v1/").model_name == "default"


def test_compatible_client_sends_max_tokens():
    from fncall_graph._compat import ChatOpenAIMaxTokens  # its payload: tests/house/test_compat.py

    model = resolve_model("http://127.0.0.1:8000/v1", max_tokens=7)
    assert isinstance(model, ChatOpenAIMaxTokens) and model.max_tokens == 7


def test_init_chat_model_provider():
    from langchain_openai import AzureChatOpenAI

    model = resolve_model(
        "azure_openai:gpt-4o",
        azure_endpoint="http://127.0.0.1:1",
        api_version="2024-10-21",
        api_key="k",
    )
    assert isinstance(model, AzureChatOpenAI)


def test_missing_integration_is_one_line():
    with pytest.raises(ModelSpecError) as info:
        resolve_model("deepseek:deepseek-chat", api_key="k")
    assert str(info.value) == (
        "model spec 'deepseek:deepseek-chat': the deepseek integration is not installed; "
        "pip install langchain-deepseek"
    )


def test_none_reads_env(monkeypatch):
    monkeypatch.setenv("FNCALL_MODEL", "ollama:llama3.2")
    model = resolve_model()
    assert isinstance(model, ChatOllama) and model.model == "llama3.2"


# -- resolve_model: errors are one clear line ----------------------------------------


@pytest.mark.parametrize(
    ("spec", "kwargs", "fragment"),
    [
        ("nosuch:model", {}, "unknown provider 'nosuch'"),
        ("openai:gpt-4o-mini", {}, "set OPENAI_API_KEY"),
        ("gpt-4o", {}, "no provider given"),
        ("ollama:", {}, "no model name after 'ollama:'"),
        ("   ", {}, "the spec is empty"),
        ("http://exa mple/v1", {}, "not a valid base URL"),
        ("replay:/nonexistent/recording.jsonl", {}, "/nonexistent/recording.jsonl"),
    ],
)
def test_spec_errors_are_one_clear_line(spec, kwargs, fragment):
    with pytest.raises(ModelSpecError) as info:
        resolve_model(spec, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"model spec {spec!r}: ")
    assert fragment in message
    assert "; " in message  # what to do follows what is wrong


def test_missing_key_names_the_variable():
    with pytest.raises(ModelSpecError, match=r"no OpenAI API key; set OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_kwargs_with_ready_model_are_rejected():
    with pytest.raises(ModelSpecError, match="cannot be applied"):
        resolve_model(FakeListChatModel(responses=["x"]), temperature=0)


def test_missing_integration_package():
    try:
        import langchain_anthropic  # noqa: F401
    except ImportError:
        with pytest.raises(ModelSpecError, match="pip install langchain-anthropic"):
            resolve_model("anthropic:claude-sonnet-4-5")
    else:
        pytest.skip("langchain-anthropic is installed, so the missing-package path cannot run")


def test_replay_spec_calls_from_file(tmp_path, monkeypatch):
    recording = tmp_path / "rec.jsonl"
    recording.write_text("", encoding="utf-8")
    calls: list[str] = []

    class ReplayChatModel(FakeListChatModel):
        @classmethod
        def from_file(cls, path: str) -> ReplayChatModel:
            calls.append(path)
            return cls(responses=["replayed"])

    monkeypatch.setattr("fncall_graph.adapters.models.replay.ReplayChatModel", ReplayChatModel)
    model = resolve_model(f"replay:{recording}")
    assert calls == [str(recording)]
    assert model.invoke("hi").content == "replayed"


def test_replay_spec_with_the_real_replay_model(tmp_path):
    from fncall_graph import replay, testing

    recording = tmp_path / "empty.jsonl"
    recording.write_text("", encoding="utf-8")
    try:
        model = resolve_model(f"replay:{recording}")
    except ModelSpecError as exc:  # an empty recording may be refused; it must say so in one line
        assert "\n" not in str(exc)
    else:
        assert isinstance(model, replay.ReplayChatModel)
    assert testing.ReplayChatModel is replay.ReplayChatModel  # the earlier import still works


# -- is_tools_unsupported_error against real client exceptions -------------------------


class _ErrorServer:
    """Loopback OpenAI-compatible endpoint that answers every chat request with one error."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body

        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = json.dumps(outer.body).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> _ErrorServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@tool
def list_tables() -> str:
    """List all tables in the SQLite database"""
    return "[]"


def _raise_from(status: int, body: dict[str, Any]) -> BaseException:
    with _ErrorServer(status, body) as server:
        model = resolve_model(f"{server.url}#m", max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            model.bind_tools([list_tables], tool_choice="auto").invoke("数据库有几张表")
        return info.value


VLLM_AUTO_TOOL_CHOICE = {
    "object": "error",
    "message": '"auto" tool choice requires --enable-auto-tool-choice and '
    "--tool-call-parser to be set",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}


@pytest.mark.parametrize(
    ("status", "body", "error_type"),
    [
        (400, VLLM_AUTO_TOOL_CHOICE, openai.BadRequestError),
        (
            400,
            {
                "error": {
                    "message": "registry.ollama.ai/library/gemma3:latest does not support tools",
                    "type": "api_error",
                    "param": None,
                    "code": None,
                }
            },
            openai.BadRequestError,
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "tools param requires --jinja flag",
                    "type": "invalid_request_error",
                }
            },
            openai.BadRequestError,
        ),
        (
            422,
            {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "tools"],
                        "msg": "Extra inputs are not permitted",
                        "input": [],
                    }
                ]
            },
            openai.UnprocessableEntityError,
        ),
    ],
)
def test_openai_compatible_tool_errors_are_recognised(status, body, error_type):
    exc = _raise_from(status, body)
    assert isinstance(exc, error_type)
    assert is_tools_unsupported_error(exc)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 4096 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            400,
            {
                "error": {
                    "message": "Invalid parameter: messages with role 'tool' must be a "
                    "response to a preceeding message with 'tool_calls'.",
                    "type": "invalid_request_error",
                }
            },
        ),
        (500, {"error": {"message": "tools are not supported", "type": "server_error"}}),
    ],
)
def test_other_openai_errors_are_not_tool_errors(status, body):
    with _ErrorServer(status, body) as server:
        model = resolve_model(f"{server.url}#m", max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            model.invoke("hi")
    assert not is_tools_unsupported_error(info.value)


def test_not_implemented_bind_tools_is_recognised():
    with pytest.raises(NotImplementedError) as info:
        FakeListChatModel(responses=["x"]).bind_tools([list_tables])
    assert is_tools_unsupported_error(info.value)


def test_wrapped_error_is_recognised_through_its_cause():
    try:
        try:
            raise NotImplementedError("bind_tools")
        except NotImplementedError as inner:
            raise RuntimeError("model call failed") from inner
    except RuntimeError as outer:
        assert is_tools_unsupported_error(outer)
    assert not is_tools_unsupported_error(ValueError("tools"))


# -- shipped recordings and unreachable servers ----------------------------------------


@pytest.mark.parametrize("name", ["database-assistant", "weather", "seed000"])
def test_shipped_recordings_resolve_by_name(name: str) -> None:
    model = resolve_model(f"replay:{name}")
    assert model.dialect in ("hermes", "react")
    assert model.remaining > 0


def test_unknown_recording_lists_the_shipped_ones() -> None:
    with pytest.raises(ModelSpecError) as info:
        resolve_model("replay:nosuch")
    assert "'replay:database-assistant'" in str(info.value)
    assert "'replay:weather'" in str(info.value)


def test_graph_built_from_a_shipped_recording_runs() -> None:
    from langchain_core.tools import tool

    from fncall_graph import create_fncall_graph

    @tool
    def get_weather(location: str) -> str:
        """获取指定城市的天气信息"""
        return f"{location}: 晴"

    graph = create_fncall_graph("replay:weather", [get_weather])
    messages = graph.invoke({"messages": [("user", "北京和广州天气怎么样")]})["messages"]
    assert [c["args"] for m in messages for c in getattr(m, "tool_calls", [])] == [
        {"location": "北京"},
        {"location": "广州"},
    ]
    assert messages[-1].content.startswith("北京的天气")


@pytest.mark.parametrize("spec", ["http://127.0.0.1:{port}/v1#x", "ollama:qwen3"])
def test_an_unreachable_server_is_one_clear_error(spec: str, monkeypatch) -> None:
    from ports import free_port

    from fncall_graph import ModelServerUnreachable, create_fncall_graph

    port = free_port()  # nothing listens there
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    model = resolve_model(spec.format(port=port), **({"max_retries": 0} if "http" in spec else {}))
    graph = create_fncall_graph(model, [], dialect="hermes")
    with pytest.raises(ModelServerUnreachable) as info:
        graph.invoke({"messages": [("user", "hi")]})
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message
    assert ("ollama serve" in message) == spec.startswith("ollama")
    assert "start the server" in message or "ollama serve" in message


def test_declared_dialect_decides_auto() -> None:
    from fncall_graph.adapters.models import initial_dialect

    declared = resolve_model("http://127.0.0.1:1/v1#x", dialect="qwen")
    assert initial_dialect(declared).name == "qwen"
    assert initial_dialect(resolve_model("http://127.0.0.1:1/v1#x")).name == "native"
    assert initial_dialect(declared, "react").name == "react"
