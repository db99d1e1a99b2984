"""What a run is asked to do: the options of `levelfield infer` (InferOptions) and `levelfield train` (TrainOptions).

    from levelfield.harness.options import InferOptions, TrainOptions
    infer(InferOptions(task_id="ctr-dlrm", framework="jax", scenario="offline", mode="performance",
                       out=Path("runs/ctr-jax-offline"), profile="smoke"))        # runner.py
    train(TrainOptions(task_id="fmnist-resnet", framework="jax", out=Path("runs/fm"), profile="smoke"))  # trainer.py

Apart from runner.py and trainer.py because the modules those drive (session.py,
result_file.py, throughput_only.py) take them too, and import neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.reference.interface import COMPILED

if TYPE_CHECKING:
    from levelfield.reference.null_model import CostModel


@dataclass
class InferOptions:
    task_id: str
    framework: str  # a framework of the rules, or "none" (reference/null_model.py)
    scenario: str
    mode: str  # performance | accuracy (LoadGen's PerformanceOnly | AccuracyOnly)
    out: Path
    profile: str = "submission"
    weights: Path | None = None  # None: init_weights(runner.INIT_WEIGHTS_SEED)
    user_conf: Path | None = None
    compile_mode: str = COMPILED
    device: str | None = None  # --device: cpu, cuda or cuda:N; None: the framework's first GPU, else the CPU
    force: bool = False
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None
    sut: str | None = None  # fast | plain; None: sut.FAST_SUT_DEFAULT for the scenario
    progress: bool = True  # the bar on stderr (shown only on a terminal)
    repeats: int | None = None  # performance runs; None: the profile's inference_repeats
    null_cost: CostModel | None = None  # framework "none": what one predict costs
    system: dict | None = None  # --system: a filled-in system description, for the price per million samples
    precision: str | None = None  # --precision (rules 1.2: inference.precisions); None: fp32, or the rules' first


@dataclass
class TrainOptions:
    task_id: str
    framework: str
    out: Path
    profile: str = "submission"
    runs: int | None = None  # default: the rules' run count for the profile
    seed: int | None = None  # run i uses seed + i; default: a random base seed
    seeds: list[int] | None = None  # every run's own seed, in order (replaying a result); overrides runs and seed
    mode: str = COMPILED
    device: str | None = None  # --device: cpu, cuda or cuda:N; None: the framework's first GPU, else the CPU
    org: str = "levelfield"
    division: str = "closed"
    system: dict | None = None  # a filled-in system description, for submission_platform/status
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None
    force: bool = False
    save_weights: bool = False
    overrides: dict = field(default_factory=dict)  # tunable hyperparameters (closed division)
    stop_at_target: bool = True  # False: train all max_epochs (calibration curves; never a result)
    # With stop_at_target False: stop once an eval reaches this value instead (calibration curves that
    # reach past any target worth proposing, without paying for every remaining epoch; never a result).
    calibration_stop: float | None = None
    # A throughput-only run (`--throughput-only`): no evaluation, no target. Under rules with throughput
    # results (1.2) a result of its own, whose warm-up and timed steps and repeats are the rules' for the
    # profile (throughput_only.plan); under rules without them (1.0, 1.1) never a result, and it needs N.
    throughput_only: bool = False
    # N (`--steps N`): the timed steps of a throughput-only run (setting it implies throughput_only); None:
    # the rules' timed steps, or a time-to-accuracy run
    throughput_steps: int | None = None
    # The 1-process reference of `--throughput-only --nproc N --scaling`, timed just before these runs
    # (levelfield/ground/scaling.py reference_record); each run logs it and its efficiency against it
    scaling_reference: dict | None = None
