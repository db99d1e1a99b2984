"""How the check shares its time limit out, and what it is expected to run within it.

    share_of(left_s=300, estimates_s=[146, 326, 95])    # the first process's seconds: 300 x 146 / 567
    expected(plan, time_limit_s=360)                     # per step: its expected start, or why it would be cut

A process gets a share of the time still left in proportion to its estimate (plan.Plan.process_estimate_s),
so a process whose steps overrun cannot take the others' time, and what one leaves unused goes to the next.
Where time is plentiful (more than PLENTY times what the remaining processes are estimated to need, as under
CI's generous limit), a process may use all of it but PLENTY times the later processes' estimates: a CI
machine loaded by other work runs the smoke check several times slower than its estimates, and not every
process alike. Inside its share, a process starts a step only when at least the step's estimate (and at
least MIN_STEP_S) is left, so a step that cannot fit is passed over for the cheaper ones after it.

`expected` plays that rule out on the estimates alone (`levelfield device-check --dry-run`): what the check
should run on its reference machine within a limit, and what it would cut. docs/scale.md's budget table is
its output for one H200.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from levelfield.cli.device_check.plan import Plan

MIN_STEP_S = 5.0  # a step is not started with less time left than this: it could only time out
PLENTY = 4.0
SYSINFO_S = 0.5  # the check's own step (the first GPU run: 0.4 s)


def share_of(left_s: float, estimates_s: list[float]) -> float:
    """The seconds the first of the remaining processes gets (module docstring)."""
    total = sum(estimates_s)
    if total <= 0:
        return left_s / len(estimates_s)
    return max(left_s * estimates_s[0] / total, left_s - PLENTY * (total - estimates_s[0]))


def needed_s(estimate_s: float | None) -> float:
    """What must be left of a process's share for a step to start."""
    return max(MIN_STEP_S, estimate_s or 0)


def expected(plan: Plan, time_limit_s: float) -> list[dict]:
    """Each step of `plan` with `start_s` (from the check's start) and `status` "runs", "partly" (a test module
    the deadline would cut short) or "cut", had every step taken exactly its estimate."""
    from levelfield.cli.device_check.plan import CHECK_PROCESS, EQUIVALENCE_PROCESS, START_S

    rows, clock = [], 0.0
    for step in plan.process_steps(CHECK_PROCESS):
        rows.append({"id": step.id, "process": step.process, "estimate_s": SYSINFO_S, "start_s": 0.0, "status": "runs"})
        clock += SYSINFO_S
    names = plan.processes()
    for i, name in enumerate(names):
        share = share_of(time_limit_s - clock, [plan.process_estimate_s(n) for n in names[i:]])
        used = START_S[plan.size].get(name, 0) if share >= MIN_STEP_S else 0.0
        for step in plan.process_steps(name):
            left, estimate = share - used, step.estimate_s or 0
            row = {"id": step.id, "process": name, "estimate_s": step.estimate_s, "start_s": round(clock + used, 1)}
            if left >= needed_s(estimate):
                row["status"], used = "runs", used + estimate
            elif name == EQUIVALENCE_PROCESS and left >= MIN_STEP_S:  # its tests start until the deadline
                row["status"], used = "partly", share
            else:
                row["status"], row["start_s"] = "cut", None
            rows.append(row)
        clock += used
    return rows
