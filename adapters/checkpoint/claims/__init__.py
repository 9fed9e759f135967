"""Claims on tool calls: each call of a thread runs at most once, across processes.

Before a tool call runs, its id is *claimed* in the checkpointer's own database (a
``fncall_tool_calls`` table beside LangGraph's; a dict for the in-memory saver). The
claim is one atomic ``INSERT ... ON CONFLICT DO NOTHING``: of two processes resuming the
same step, one inserts and runs the call, the other finds the claim and does not. When
the call finishes, its result is stored with the claim.

What a run finds when the call is already claimed:

- claimed by a run that is still going (the call is running, or that run resumed the
  same approval): it stops with a :class:`ToolCallClaimed` error
  (:class:`ThreadAlreadyResumed`, :class:`ToolCallInProgress`) and runs nothing;
- finished, by a run that has ended without the thread saving the result (its process
  died, or its checkpoint write failed while the process lives on — this process
  included), and nothing has happened in the thread since: the stored result is used,
  the call is not run;
- finished, and the thread has moved on (another run took over, or this is a branch of
  the thread resumed from an older checkpoint), or the finishing run may still be
  saving it: :class:`ToolCallAlreadyRan`;
- still marked running, but nobody runs it any more (its process is gone, killed inside
  the tool; or its holder stopped renewing it), or marked abandoned (its run was
  cancelled inside the tool, e.g. by a LangGraph server's ``interrupt`` or ``rollback``
  multitask strategy): the outcome is unknown; it is answered as such, or run again if
  the tool is declared idempotent.

Whether a claim is still held is known exactly by the process holding it (it knows
which of its calls are running). Any other process goes by a *lease*: while a call
runs, its process renews its claim every ``stale_after / 4`` seconds (a heartbeat);
a claim not renewed for ``stale_after`` seconds (:data:`DEFAULT_LEASE`) has lost its
holder — unless that holder is on this machine and known to be gone, which is said at
once (the pid, its start time, the boot).

A claim's whole life (claim, run the call, store its outcome) is one flow,
:meth:`CallClaims.once`: however an attempt stops once it made the claim (an error, a
cancel, an outcome that could not be stored), the claim is settled (given up, finished
or marked abandoned) and not left ``running`` while its process lives on. Nothing here

The package, one module a job (each imports only those above it):

- :mod:`.errors`: what a run that lost a claim is told;
- :mod:`.owner`: who holds a claim (process and attempt), run tokens, lost runs;
- :mod:`.store`: the claims table in SQLite or PostgreSQL (sync and async), or a dict;
- :mod:`.lease`: the heartbeat that renews a running call's claim, and takeover;
- :mod:`.flows`: claim → run → store the outcome; the functions the nodes use;
- :mod:`.thread_runs`: one run at a time per thread, across processes (a hold row
  in the same table, renewed by the same lease).
"""

from __future__ import annotations

from .errors import (
    ThreadAlreadyResumed,
    ToolCallAlreadyRan,
    ToolCallClaimed,
    ToolCallInProgress,
    ToolCallTakenOver,
)
from .flows import FINISH_ATTEMPTS as FINISH_ATTEMPTS
from .flows import CallClaims, TaskClaim, claim_in_task, claims_for
from .lease import DEFAULT_LEASE
from .owner import _HOST as _HOST
from .owner import RUN_KEY, ClaimKey, ClaimRow, run_ended
from .owner import THREAD_RUN_ID as THREAD_RUN_ID
from .owner import Owner as Owner
from .owner import Status as Status
from .owner import _start_time as _start_time
from .owner import lost_run as lost_run
from .store import DEFAULT_BUSY_TIMEOUT as DEFAULT_BUSY_TIMEOUT
from .store import (
    SWEEP_IDLE,
    aforget_thread,
    forget_deleted_threads,
    forget_thread,
)
from .store import _Finish as _Finish
from .store import _Get as _Get
from .store import _Insert as _Insert
from .thread_runs import (
    LEASE_KEY,
    MULTITASK_KEY,
    Multitask,
    ThreadBusy,
    athread_run,
    thread_run,
)

# what the rest of the product (nodes, graphs, the package's face) and its users import;
# the names imported `as` themselves serve the savers beside this package, and tests that
# play another process or drive a store directly
__all__ = [
    "DEFAULT_LEASE",
    "LEASE_KEY",
    "MULTITASK_KEY",
    "RUN_KEY",
    "SWEEP_IDLE",
    "CallClaims",
    "ClaimKey",
    "ClaimRow",
    "Multitask",
    "TaskClaim",
    "ThreadAlreadyResumed",
    "ThreadBusy",
    "ToolCallAlreadyRan",
    "ToolCallClaimed",
    "ToolCallInProgress",
    "ToolCallTakenOver",
    "aforget_thread",
    "athread_run",
    "claim_in_task",
    "claims_for",
    "forget_deleted_threads",
    "forget_thread",
    "run_ended",
    "thread_run",
]
