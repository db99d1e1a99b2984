"""`levelfield infer --scenario server --find-peak`: the largest Server target_qps LoadGen judges VALID.

    from levelfield.harness.find_peak import find_peak
    peak = find_peak(InferOptions(task_id="fmnist-resnet", framework="jax", scenario="server",
                                  mode="performance", out=Path("runs/fm-jax-peak"), profile="submission"))
    # runs/fm-jax-peak/server-target.yaml: the user settings file the real run then takes (the peak - 5%)

Every step is an ordinary performance run of the profile (its minimum duration
and query count, one repeat) at one target, judged by LoadGen's whole verdict:
latency bound, minimum duration and queries, and early stopping. The first step
runs at the target the runner sizes by itself (about half of what the batcher
serves within the bound, sizing.py); the search doubles the target while runs
are VALID, halves it while they are not, then bisects (geometrically) until the
VALID and INVALID targets are within `precision` of each other. A target at the
edge passes one run in two, so the peak is then run again with the profile's
repeats, as the real run will be, and lowered by `precision` until every repeat
is VALID (after VERIFY_TRIES, the search's lower VALID targets are tried);
the file written for the real run offers that peak less `precision` (the peak
is known to within it only). Each step's folder stays under steps/ as
evidence; find_peak.json lists them with the peak.

Why not LoadGen's own FindPeakPerformance mode: it judges each step by the
latency constraint only (minimum duration and queries are left to the user, early
stopping is not checked), it must be given a lower bound that already passes,
it keeps the whole search inside one StartTest, so the steps cannot be shown,
interrupted or kept apart, and its logs report the steps as generic messages.

The result pins the batch cap (`max_batch_size`) the peak step was sized with,
so the real run serves batches the same way; a user settings file given with
--user-conf is carried into every step and into the written file.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import atomic_write_text

if TYPE_CHECKING:  # annotations only: find_peak imports the runner when it runs, never at import
    from levelfield.harness.options import InferOptions
    from levelfield.reference.interface import Implementation
    from levelfield.reference.null_model import NullImplementation

PRECISION = 0.05  # stop when the INVALID target is within 5% above the VALID one
MAX_STEPS = 12  # a bound on the search however noisy the system: ~12 runs of the profile
VERIFY_TRIES = 4  # the found peak, then up to 3 targets `precision` lower, with the profile's repeats
FALLBACK_TRIES = 2  # then the search's VALID targets below those, highest first
TARGET_FILE = "server-target.yaml"
REPORT_FILE = "find_peak.json"
STEPS = "steps"


def find_peak(
    options: InferOptions,
    impl: Implementation | NullImplementation | None = None,
    *,
    precision: float = PRECISION,
    max_steps: int = MAX_STEPS,
    report: Callable[[str], object] = print,
) -> dict:
    """Search, write server-target.yaml and find_peak.json into options.out; returns the report."""
    from levelfield.harness.loadgen_config import read_user_conf
    from levelfield.harness.runner import build_implementation, cached_suite

    if options.scenario != "server" or options.mode != "performance":
        raise UserError(
            f"--find-peak searches the Server scenario in performance mode, not {options.scenario} {options.mode}"
        )
    base_conf = _user_document(options.user_conf)
    if "target_qps" in read_user_conf(options.user_conf, "server"):
        raise UserError(
            f"{options.user_conf}: sets server target_qps; --find-peak searches it",
            hint="remove target_qps from the file, or run without --find-peak",
        )
    out = Path(options.out)
    if (out / TARGET_FILE).exists() and not options.force:
        raise UserError(f"{out / TARGET_FILE}: exists; not overwriting it", hint="pass --force to search again")
    out.mkdir(parents=True, exist_ok=True)
    if impl is None:
        suite = cached_suite(options.rules_version, options.rules_dir)
        impl = build_implementation(options, suite.task(options.task_id))  # compiled once for every step

    search = _Search(options, impl, base_conf, out, report)
    low, high = search.bracket(max_steps)
    while (
        low is not None
        and high is not None
        and high["target_qps"] > low["target_qps"] * (1 + precision)
        and len(search.steps) < max_steps
    ):
        middle = search.step(math.sqrt(low["target_qps"] * high["target_qps"]))
        low, high = (middle, high) if middle["valid"] else (low, middle)
    if low is not None:
        low = search.verify(low, precision)
    steps = search.steps
    document = {
        "task": options.task_id,
        "framework": options.framework,
        "profile": options.profile,
        "precision": precision,
        "steps": steps,
        "peak": None
        if low is None
        else {k: low[k] for k in ("step", "target_qps", "max_batch_size", "samples_per_s", "repeats", "batches")},
    }
    atomic_write_text(out / REPORT_FILE, json.dumps(document, indent=2) + "\n", overwrite=True)
    if low is None:
        raise UserError(
            f"{out / REPORT_FILE}: no target was VALID in every run (the lowest tried: "
            f"{min(s['target_qps'] for s in steps):.4g} qps)",
            hint="this system cannot meet the Server latency bound steadily; see each step's result.json",
        )
    # The peak is known to within `precision` only, and at the edge noise decides: the real run gets
    # `precision` of headroom under it (find_peak.json keeps the peak itself).
    document["written_target_qps"] = round(low["target_qps"] * (1 - precision), 3)
    atomic_write_text(out / REPORT_FILE, json.dumps(document, indent=2) + "\n", overwrite=True)
    server = {"target_qps": document["written_target_qps"], "max_batch_size": low["max_batch_size"]}
    atomic_write_text(out / TARGET_FILE, _yaml(_with_server(base_conf, server)), overwrite=True)
    return document


class _Search:
    """The steps so far; each step one performance run of the profile at one target."""

    def __init__(self, options, impl, base_conf: dict, out: Path, report):
        self.options, self.impl, self.base_conf, self.out, self.report = options, impl, base_conf, out, report
        self.steps: list[dict] = []

    def step(self, target: float | None, repeats: int = 1) -> dict:
        """A run of `repeats` at `target` (None: the target the runner sizes by itself); its record."""
        from levelfield.harness.runner import infer

        index = len(self.steps) + 1
        folder = self.out / STEPS / f"step_{index}"
        conf_path = self.out / STEPS / f"step_{index}.yaml"
        conf_path.parent.mkdir(parents=True, exist_ok=True)
        # Every step after the first serves batches as the first did: the cap it was sized with.
        pinned = {} if not self.steps else {"max_batch_size": self.steps[0]["max_batch_size"]}
        conf = _with_server(self.base_conf, pinned if target is None else {**pinned, "target_qps": target})
        atomic_write_text(conf_path, _yaml(conf), overwrite=True)
        result = infer(
            dataclasses.replace(self.options, out=folder, user_conf=conf_path, repeats=repeats, force=True),
            impl=self.impl,
        )
        record = {
            "step": index,
            "target_qps": target if target is not None else _logged_target(result),
            "max_batch_size": result["server_batches"]["max_batch_size"],
            "valid": result["valid"],
            "samples_per_s": result["samples_per_s"],
            "repeats": repeats,
            "batches": {k: result["server_batches"][k] for k in ("mean_size", "mean_ms", "p90_ms")},
            "reasons": result["invalid_reasons"],
        }
        self.steps.append(record)
        runs = f", {repeats} runs" if repeats > 1 else ""
        self.report(
            f"  step {index}: target {record['target_qps']:.4g} qps{runs} -> "
            f"{'VALID' if record['valid'] else 'INVALID'} ({record['samples_per_s']:.4g} samples/s)"
        )
        return record

    def verify(self, peak: dict, precision: float) -> dict | None:
        """The peak again with the profile's repeats, as the real run will be; precision lower while any
        repeat is INVALID (a target at the edge passes one run in two). None if none passed."""
        from levelfield.harness.runner import cached_suite

        suite = cached_suite(self.options.rules_version, self.options.rules_dir)
        repeats = self.options.repeats or int(suite.profiles[self.options.profile]["inference_repeats"])
        target = peak["target_qps"]
        for _ in range(VERIFY_TRIES):
            checked = self.step(target, repeats)
            if checked["valid"]:
                return checked
            last_tried, target = target, target * (1 - precision)
        # A system whose batches grow into a slower regime near the edge can fail every target a few
        # percent under the peak; the search's lower VALID targets are then the candidates, highest first.
        lower = sorted(
            {s["target_qps"] for s in self.steps if s["valid"] and s["repeats"] == 1 and s["target_qps"] < last_tried},
            reverse=True,
        )
        for target in lower[:FALLBACK_TRIES]:
            checked = self.step(target, repeats)
            if checked["valid"]:
                return checked
        return None

    def bracket(self, max_steps: int) -> tuple[dict | None, dict | None]:
        """(a VALID step, an INVALID step above it): from the sized default, x2 up or /2 down."""
        first = self.step(None)
        low, high = (first, None) if first["valid"] else (None, first)
        while (low is None) != (high is None) and len(self.steps) < max_steps:
            if high is None:
                candidate = self.step(low["target_qps"] * 2)
                low, high = (candidate, None) if candidate["valid"] else (low, candidate)
            else:
                candidate = self.step(high["target_qps"] / 2)
                low, high = (candidate, high) if candidate["valid"] else (None, candidate)
        return low, high


def _logged_target(result: dict) -> float:
    return float(result["sizing"]["chosen"]["target_qps"])


def _user_document(path) -> dict:
    if path is None:
        return {"version": 1}
    from levelfield.ground.validation import load_document

    return load_document(Path(path))


def _with_server(conf: dict, server: dict) -> dict:
    merged = json.loads(json.dumps(conf))
    merged.setdefault("version", 1)
    merged["server"] = {**merged.get("server", {}), **server}
    return merged


def _yaml(document: dict) -> str:
    import yaml

    header = "# written by levelfield infer --find-peak: the largest VALID Server target found (find_peak.json)\n"
    return header + yaml.safe_dump(document, sort_keys=False)
