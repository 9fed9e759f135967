"""The ``serve-local`` command: the bundled model as an OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse

from .resources import CLIError

__all__ = []


def cmd_serve_local(args: argparse.Namespace) -> int:
    """Serve the bundled SmolLM2-135M-Instruct with llama.cpp's OpenAI-compatible server on
    127.0.0.1, until Ctrl-C (or SIGTERM); any OpenAI client, or --model of another
    fncall-graph command, can then use it."""
    import signal

    from fncall_graph.adapters.models.local_server import (
        MODEL_ALIAS,
        LocalModelServer,
        LocalServerError,
    )

    # the child's port setting is applied after its default (0: the kernel chooses)
    server = LocalModelServer(extra_args=["--set", f"port={args.port}"])
    stop = {signal.SIGINT, signal.SIGTERM}
    try:
        server.start()
    except LocalServerError as exc:
        raise CLIError(f"serve-local --port {args.port}: {exc}") from exc
    try:
        url = server.base_url
        print(f"serving {MODEL_ALIAS} (OpenAI-compatible) at {url}", flush=True)
        print(f"use it with: --model '{url}#{MODEL_ALIAS}'   (Ctrl-C stops it)", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        signal.sigwait(stop)
    finally:
        server.stop()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stop)
    print("stopped", flush=True)
    return 0
