"""One process holding the claim on tool call ``c1`` of a thread, for the lease tests.

Usage: ``python lease_child.py MODE KIND WHERE THREAD STEP LEASE`` (KIND ``sqlite`` with
a file, or ``postgres`` with a URL).

- ``hold``: claims the call and runs it: prints ``running``, then waits for a line on
  stdin before the call returns (its heartbeat renews the claim meanwhile);
  if its claim was taken over meanwhile (it was frozen past the lease), it prints
  ``taken over`` and exits with status 3;
- ``stuck``: claims and runs the call, but every write of its outcome fails (the
  database went away as the call ended), so the claim is left ``running``; prints
  ``stuck`` and lives on until a line comes on stdin.
"""

from __future__ import annotations

import sys
from typing import Any

from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.adapters.checkpoint.claims import (
    CallClaims,
    ClaimKey,
    ToolCallTakenOver,
    _Finish,
    claims_for,
)


class NoWrites:
    """The claim store, where storing or settling a call's outcome always fails."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def run(self, op: Any) -> Any:
        if isinstance(op, _Finish):
            raise ConnectionError("the database went away")
        return self.store.run(op)


def main() -> None:
    mode, kind, where, thread, step, lease = sys.argv[1:]
    opened = sqlite_saver(where) if kind == "sqlite" else postgres_saver(where)
    with opened as saver:
        claims = claims_for(saver, stale_after=float(lease))
        if mode == "stuck":
            claims = CallClaims(NoWrites(claims.store), saver, stale_after=float(lease))

        def call() -> str:
            if mode == "hold":
                print("running", flush=True)
                sys.stdin.readline()
            return "done"

        try:
            claims.once(
                ClaimKey(thread, "", "c1"),
                step,
                call,
                tool="log",
                idempotent=False,
                unknown=lambda row: "unknown",
            )
        except ConnectionError:
            print("stuck", flush=True)
            sys.stdin.readline()
        except ToolCallTakenOver:
            print("taken over", flush=True)
            sys.exit(3)


if __name__ == "__main__":
    main()
