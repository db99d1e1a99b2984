"""Top ops by self time from a profiler trace, and the median / spread of repeated timings (no framework imported).

    top_self_time([TraceEvent("thread-1", "fusion.3", start_ns=0, duration_ns=900), ...], limit=10)
    # [{"op": "fusion.3", "self_ms": 0.0009, "calls": 1}, ...]
    spread([12.0, 11.0, 13.5])   # {"median": 12.0, "min": 11.0, "max": 13.5, "values": [12.0, 11.0, 13.5]}

TensorFlow's and JAX's profilers write the same trace format (XPlane): per
thread ("line") a list of events, nested in time when one runs inside
another (an XLA executable's run around its fused ops). An event's self time
is its duration minus that of the events directly inside it on the same line,
so a wrapper never counts its children's time twice; the host's waits for the
device (`WAITS`) are left out. Ops of a thread pool
run side by side on several lines, so self times summed over lines can
exceed the wall time of the step: they say where the CPU time went.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

TOP_OPS = 10  # ops kept per trace: enough to name where a step's time goes, small enough to commit
# Events that mark a thread pool's bookkeeping or an event's end, not an op (XLA's CPU runtime writes them).
SKIPPED_PREFIXES = ("ThreadpoolListener::", "end: ")
# The host thread waiting for the step's result (TensorFlow's .numpy(), JAX's device_get): as long as the
# step, and no op of its own, so it would head every list and push an op out.
WAITS = ("BlockUntilReady", "ThunkExecutor::Execute (wait for completion)", "np.asarray(jax.Array)")


@dataclass(frozen=True)
class TraceEvent:
    line: str  # the thread (XPlane line) it ran on
    name: str
    start_ns: float
    duration_ns: float


def top_self_time(events: list[TraceEvent], limit: int = TOP_OPS) -> list[dict]:
    """The `limit` event names with the largest total self time: [{"op", "self_ms", "calls"}], largest first."""
    self_ns: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    by_line: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in events:
        if event.duration_ns > 0 and not event.name.startswith(SKIPPED_PREFIXES) and event.name not in WAITS:
            by_line[event.line].append(event)
    for line_events in by_line.values():
        # Outer events first when two start together, so a child is always seen after its parent.
        line_events.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        open_events: list[TraceEvent] = []  # the chain of events enclosing the current one
        for event in line_events:
            while open_events and open_events[-1].start_ns + open_events[-1].duration_ns <= event.start_ns:
                open_events.pop()
            if open_events:  # the directly enclosing event loses this one's time from its self time
                self_ns[open_events[-1].name] -= event.duration_ns
            self_ns[event.name] += event.duration_ns
            calls[event.name] += 1
            open_events.append(event)
    # An event wholly covered by the events inside it (clock granularity) has no time of its own to list.
    ranked = sorted(((name, ns) for name, ns in self_ns.items() if ns > 0), key=lambda item: -item[1])[:limit]
    return [{"op": name, "self_ms": ns / 1e6, "calls": calls[name]} for name, ns in ranked]


def spread(values: list[float]) -> dict:
    """Median, min and max of repeated figures, with every value (the JSON keeps the raw figures)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": list(values)}
