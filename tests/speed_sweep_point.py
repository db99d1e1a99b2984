"""One point of the speed sweep: every scenario in the smoke and demo profiles with framework `none` at one cost.

    python tests/speed_sweep_point.py --per-call-us 0 --per-sample-us 10000 --profile smoke --out DIR

Runs in its own process (LoadGen's state is process-wide, and tests/test_speed_sweep.py runs
the points side by side) and writes DIR/summary.json: one entry per profile x scenario with
the cost, LoadGen's verdict and reasons, the sizes the runner chose and its LoadGen probes. Nothing about the
system's speed is configured: every size comes from the runner's own measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conftest import infer_options

TASK = "ctr-dlrm"
PROFILES = ("smoke", "demo")
SCENARIOS = ("singlestream", "multistream", "server", "offline")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-call-us", type=float, required=True)
    parser.add_argument("--per-sample-us", type=float, required=True)
    parser.add_argument("--profile", choices=PROFILES, action="append", help="default: every profile")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from levelfield.harness.runner import infer
    from levelfield.reference.null_model import CostModel

    cost = CostModel(args.per_call_us, args.per_sample_us)
    entries = []
    for profile in args.profile or PROFILES:
        for scenario in SCENARIOS:
            # One repeat: the sweep tests sizing, which repeats do not change (each repeat is one
            # more run with the same settings).
            result = infer(
                infer_options(
                    TASK,
                    "none",
                    scenario,
                    "performance",
                    args.out / f"{profile}-{scenario}",
                    profile=profile,
                    repeats=1,
                    null_cost=cost,
                )
            )
            entries.append(
                {
                    "profile": profile,
                    "scenario": scenario,
                    "cost": cost.as_dict(),
                    "valid": result["valid"],
                    "invalid_reasons": result["invalid_reasons"],
                    "metric": result["metric"],
                    "value": result[result["metric"]],
                    "chosen": result["sizing"]["chosen"],
                    "resized": result["sizing"]["resized"],
                    "probe": result["sizing"].get("loadgen_probe"),
                    "loadgen_run_s": result["loadgen_run_s"],
                    "warmup_s": result["warmup_s"],
                }
            )
            print(json.dumps(entries[-1]), flush=True)
    (args.out / "summary.json").write_text(json.dumps(entries, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
