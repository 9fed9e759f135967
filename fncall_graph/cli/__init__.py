"""The ``fncall-graph`` command: chat with any model over MCP tools, from a terminal.

Commands:

- ``chat``: an interactive session; answers stream token by token and every tool call
  shows a live line (name, arguments, running/done/error, elapsed time); ``/help``
  lists its commands, and Ctrl-C interrupts the turn being answered, not the session;
- ``run``: one question, non-interactive; exit status 0 on a final answer, 1 otherwise;
  ``--json`` prints the thread's messages;
- ``demo``: the database-assistant example (four questions, one thread) against
  ``mcp-server-sqlite`` on a fresh database, printed as a transcript: recorded replies
  first, then the bundled local model live;
- ``prompt``: the exact system prompt a dialect writes for the tools of an MCP config.

Threads are checkpointed in a SQLite file (``--db``), so ``--thread``/``--resume``
continue them in a later process; ``--approve TOOL`` asks at the terminal before that
tool runs; ``--trace``/``--trace-file`` show each model call's four views
(see :mod:`fncall_graph.trace`). MCP servers' stderr is appended to ``mcp-servers.log``
next to the checkpoint file (``demo``: in the state folder), named when the servers
start, so their logs are kept but not written between the session's lines.

Errors a user can fix (a bad model spec, an unreachable server, a missing key, a bad MCP
config) end the command with one line on stderr and exit status 1. ``FNCALL_DEBUG=1``
shows the full traceback instead.

Modules: :mod:`.main` (the options and the entry point); a module a command:
:mod:`.chat` (``chat`` and ``run``), :mod:`.demo`, :mod:`.serve_local`, :mod:`.bench`,
:mod:`.prompt`; :mod:`.model_options` (what ``--grammar``, ``--call-format`` and
``--trace-file`` make of a graph), :mod:`.resources` (model, tools, checkpoints,
dialect; errors in one line), :mod:`.terminal` (what the person sees), :mod:`.session`
(a thread's turns), :mod:`.approval` (decisions at the terminal).
"""

from .main import main

__all__ = ["main"]
