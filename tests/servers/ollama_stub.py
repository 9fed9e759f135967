"""A loopback HTTP server that answers like Ollama's REST API, for contract tests.

It speaks the documented bodies of ``/api/chat`` (streamed NDJSON by default, one JSON
object with ``"stream": false``), ``/api/tags``, ``/api/show`` and ``/api/version`` —
see https://github.com/ollama/ollama/blob/main/docs/api.md — so the real ``ollama``
client inside ``ChatOllama`` can be exercised without an Ollama binary. Each test
scripts the replies it wants and reads back the requests it caused.

Example:
    >>> with OllamaStub(tool_less={"gemma3"}) as stub:  # doctest: +SKIP
    ...     stub.reply("Hello!")
    ...     stub.reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "北京"}}])
    ...     ChatOllama(model="qwen3", base_url=stub.url).invoke("hi")
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OllamaStub", "ScriptedReply"]


@dataclass
class ScriptedReply:
    """One scripted answer to ``/api/chat``.

    ``content`` is split into word-sized chunks when the client streams; ``tool_calls``
    are ``{"name", "arguments"}`` dicts; ``status``/``error`` turn the reply into an HTTP
    error with Ollama's ``{"error": ...}`` body.
    """

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    thinking: str | None = None
    status: int = 200
    error: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _full_name(model: str) -> str:
    name = model if ":" in model else f"{model}:latest"
    return name if "/" in name else f"registry.ollama.ai/library/{name}"


class OllamaStub:
    """Ollama's HTTP API on ``127.0.0.1`` with an ephemeral port, in a background thread.

    Args:
        tool_less: model names that reject ``tools`` with HTTP 400, as Ollama does for
            models whose template has no tool support.
        models: names listed by ``/api/tags`` (defaults to a few common ones).
    """

    def __init__(
        self, *, tool_less: set[str] | None = None, models: list[str] | None = None
    ) -> None:
        self.tool_less = {m.split(":")[0] for m in (tool_less or set())}
        self.models = models or ["qwen3:latest", "llama3.2:latest", "gemma3:latest"]
        self.requests: list[tuple[str, str, dict[str, Any] | None]] = []
        self._replies: deque[ScriptedReply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ----------------------------------------------------------------------

    def reply(
        self,
        content: str = "",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        thinking: str | None = None,
    ) -> None:
        """Queue the next ``/api/chat`` answer."""
        with self._lock:
            self._replies.append(ScriptedReply(content, list(tool_calls or []), thinking))

    def fail(self, status: int, error: str) -> None:
        """Queue an HTTP error answer with Ollama's ``{"error": ...}`` body."""
        with self._lock:
            self._replies.append(ScriptedReply(status=status, error=error))

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the ``/api/chat`` requests received so far."""
        return [body or {} for method, path, body in self.requests if path == "/api/chat"]

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> OllamaStub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> OllamaStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- responses ----------------------------------------------------------------------

    def _next_reply(self) -> ScriptedReply:
        with self._lock:
            return self._replies.popleft() if self._replies else ScriptedReply("ok")

    def _chat(self, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]], bool]:
        """Status, response objects, and whether they go out as an NDJSON stream."""
        model = str(body.get("model", ""))
        stream = body.get("stream", True) is not False
        if body.get("tools") and model.split(":")[0] in self.tool_less:
            return 400, [{"error": f"{_full_name(model)} does not support tools"}], False
        reply = self._next_reply()
        if reply.error is not None:
            return reply.status, [{"error": reply.error}], False
        calls = [
            {"function": {"name": c["name"], "arguments": c.get("arguments", {})}}
            for c in reply.tool_calls
        ]
        stats = {
            "done_reason": "stop",
            "done": True,
            "total_duration": 885095291,
            "load_duration": 3753500,
            "prompt_eval_count": 122,
            "prompt_eval_duration": 328493000,
            "eval_count": 33,
            "eval_duration": 552222000,
        }
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.thinking is not None:
                message["thinking"] = reply.thinking
            if calls:
                message["tool_calls"] = calls
            return 200, [{"model": model, "created_at": _now(), "message": message, **stats}], False
        parts: list[dict[str, Any]] = []
        if reply.thinking is not None:
            parts.append({"role": "assistant", "content": "", "thinking": reply.thinking})
        words = reply.content.split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            if piece:
                parts.append({"role": "assistant", "content": piece})
        if calls:
            # Ollama streams the calls in a message chunk of their own, before the end.
            parts.append({"role": "assistant", "content": "", "tool_calls": calls})
        objects = [
            {"model": model, "created_at": _now(), "message": m, "done": False} for m in parts
        ]
        objects.append(
            {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": ""},
                **stats,
            }
        )
        return 200, objects, True

    def _show(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = str(body.get("model", ""))
        capabilities = ["completion"]
        if model.split(":")[0] not in self.tool_less:
            capabilities.append("tools")
        return 200, {
            "modelfile": f"FROM {model}\n",
            "parameters": 'stop "<|im_end|>"',
            "template": "{{ .Prompt }}",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "qwen3",
                "families": ["qwen3"],
                "parameter_size": "8.2B",
                "quantization_level": "Q4_K_M",
            },
            "model_info": {"general.architecture": "qwen3"},
            "capabilities": capabilities,
            "modified_at": _now(),
        }

    def _tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": _now(),
                    "size": 3825819519,
                    "digest": "fe938a131f40e6f6d40083c9f0f430a515233eb2edaa6d72eb85c50d64f2300e",
                    "details": {
                        "format": "gguf",
                        "family": "llama",
                        "families": None,
                        "parameter_size": "7B",
                        "quantization_level": "Q4_0",
                    },
                }
                for name in self.models
            ]
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def _body(self) -> dict[str, Any] | None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                return json.loads(raw) if raw else None

            def _send(self, status: int, payload: Any, content_type: str) -> None:
                data = payload if isinstance(payload, bytes) else payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj, ensure_ascii=False), "application/json")

            def do_GET(self) -> None:
                stub.requests.append(("GET", self.path, None))
                if self.path == "/":
                    self._send(200, "Ollama is running", "text/plain; charset=utf-8")
                elif self.path == "/api/tags":
                    self._json(200, stub._tags())
                elif self.path == "/api/version":
                    self._json(200, {"version": "0.12.6"})
                else:
                    self._json(404, {"error": "404 page not found"})

            def do_POST(self) -> None:
                body = self._body()
                stub.requests.append(("POST", self.path, body))
                if self.path == "/api/chat":
                    status, objects, stream = stub._chat(body or {})
                    if stream:
                        lines = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)
                        self._send(status, lines, "application/x-ndjson")
                    else:
                        self._json(status, objects[0])
                elif self.path == "/api/show":
                    self._json(*stub._show(body or {}))
                else:
                    self._json(404, {"error": "404 page not found"})

        return Handler
