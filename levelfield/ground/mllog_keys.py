"""Every `levelfield_*` name levelfield writes into a log or a tree: one spelling for writer and reader.

    from mlperf_logging.mllog import constants as K
    from levelfield.ground import mllog_keys as LK
    log.event(K.SEED, seed)                  # MLPerf's own keys come from mllog's constants
    log.event(LK.RUN_INDEX, index)           # levelfield's keys for what MLPerf lacks come from here
    log.first(LK.RULES_VERSION)              # the checker, packager and leaderboard read the same names

The trainer writes these keys; the checker, the packager and the leaderboard
read them. The rules' MLLOG ruleset (`rules/<version>/mllog/*.yaml`) names the
ones every log must hold; a test keeps that list and this module in step.
"""

from __future__ import annotations

# -- the run's identity and rules (logged before init_start ends) ---------------------------------
RUN_INDEX = "levelfield_run_index"  # i of result_<i>.txt
RULES_VERSION = "levelfield_rules_version"  # the rules the run followed, e.g. "1.0"
PROFILE = "levelfield_profile"  # submission | demo | smoke
SUBMITTABLE = "levelfield_submittable"  # whether the profile may be submitted
QUALITY_METRIC = "levelfield_quality_metric"  # e.g. "top1"
QUALITY_TARGET = "levelfield_quality_target"  # the value eval_accuracy must reach
DATASET_DIGEST = "levelfield_dataset_digest"  # {file or array label: SHA-256}
# N of `levelfield train --throughput-only --steps N`: the run trained N steps with no evaluation and no
# target, so it is never a time-to-accuracy result (`levelfield package` refuses it, TRN024 reports it);
# absent from every time-to-accuracy log
THROUGHPUT_ONLY = "levelfield_throughput_only"
# Rules 1.2 throughput results: the steps trained after run_start and before the timed ones, excluded from the
# figure (the rules' warmup_steps for the profile); absent from every other log
WARMUP_STEPS = "levelfield_warmup_steps"

# -- the software and hardware that ran it --------------------------------------------------------
FRAMEWORK = "levelfield_framework"  # pytorch | tensorflow | jax
FRAMEWORK_VERSION = "levelfield_framework_version"
COMPILE_MODE = "levelfield_compile_mode"  # compiled | eager
# {"mode", "framework": its determinism switches, "threads": its CPU thread counts}, as read at run time
# (Implementation.determinism_settings); optional in every rules version: older logs lack it.
DETERMINISM = "levelfield_determinism"
DEVICE = "levelfield_device"  # e.g. "cpu", "cuda:0"
WORLD_SIZE = "levelfield_world_size"  # processes of the run, over every node (`--nproc` x `--nnodes`)
# hosts the run spanned (`--nnodes`); optional in every rules version (older logs lack it: one node)
NODES = "levelfield_nodes"
# samples each process takes per step, global_batch_size / WORLD_SIZE; optional (older logs lack it)
LOCAL_BATCH_SIZE = "levelfield_local_batch_size"
# Workers of the input pipeline inside train_steps (rules 1.1 image-resnet50-standard: a DataLoader's processes,
# tf.data's or the JAX prefetcher's threads; 0: built in the training process); absent where a task has none
INPUT_WORKERS = "levelfield_input_workers"
# MLPerf's MODEL_BN_SPAN (model_bn_span) is logged by tasks with batch norm: the samples one batch-norm
# statistic is computed over (the global batch when synchronised, a rank's share when per process).
DISTRIBUTED_BACKEND = "levelfield_distributed_backend"  # gloo | nccl, only when WORLD_SIZE > 1
# Who started the run's processes: {"name": slurm | openmpi (a workload manager: `srun` / `mpirun levelfield
# train`) | torchrun | levelfield (`levelfield train` itself, one process or --nproc/--nnodes), "job_id",
# "step_id": the manager's ids as strings, null without a manager} (ground/cluster_managers.py);
# optional in every rules version: older logs lack it
LAUNCHER = "levelfield_launcher"
SYSTEM_FINGERPRINT = "levelfield_system_fingerprint"  # SHA-256 of the collected system description
ENVIRONMENT = "levelfield_environment"  # the environment fingerprint (ground/environment.py)

# -- what the run measured ------------------------------------------------------------------------
TIME_TO_FIRST_STEP_S = "levelfield_time_to_first_step_s"
PEAK_RSS_MIB = "levelfield_peak_rss_mib"
PEAK_DEVICE_MEMORY_MIB = "levelfield_peak_device_memory_mib"  # GPUs only; absent on a CPU
DEVICE_MEMORY_USED_MIB = "levelfield_device_memory_used_mib"  # GPUs only (NVML)
# The GPUs' energy (NVML's total-energy counters), run_start..run_stop, in J; "not measured" where no GPU
# meter exists (a CPU run; logs written before that value existed leave the key out)
ENERGY_J = "levelfield_energy_j"
# The cost of a result (levelfield/ground/meter.py, levelfield/harness/run_meter.py), over run_start..run_stop:
SAMPLE_INTERVAL_MS = "levelfield_sample_interval_ms"  # how often memory and energy were sampled
PEAK_TREE_RSS_MIB = "levelfield_peak_tree_rss_mib"  # highest summed RSS of the run's process tree (sampled)
TREE_PROCESSES = "levelfield_tree_processes"  # most processes of the tree seen at once (workers, ranks)
PROCESS_CPU_S = "levelfield_process_cpu_s"  # CPU seconds the tree used
# Shares (0-1) of the host's CPU time, all CPUs together: the tree's, every process's, and other processes'
# (the host's load: above the rules' checks.host_load_max_others_share the result is marked, SYS009)
PROCESS_CPU_SHARE = "levelfield_process_cpu_share"
HOST_CPU_SHARE = "levelfield_host_cpu_share"
OTHERS_CPU_SHARE = "levelfield_others_cpu_share"
CPU_ENERGY_J = "levelfield_cpu_energy_j"  # the CPU packages' (RAPL), in J, or "not measured"
PEAK_DEVICE_MEMORY_USED_MIB = "levelfield_peak_device_memory_used_mib"  # NVML's used memory, highest sample
# hourly_price_usd of the system description x nodes x (run_stop - run_start); only with a declared price
PRICE_USD = "levelfield_price_usd"
# The timed steps' throughput (levelfield/harness/throughput.py): global-batch samples per second over the
# train_steps calls, and the median of the calls' mean step times; absent when no step was timed
TRAIN_SAMPLES_PER_S = "levelfield_train_samples_per_s"
STEP_TIME_MS = "levelfield_step_time_ms"
# Throughput-only runs: the optimizer steps the framework reported having run (one loss each) over the
# timed calls, counted as they returned, which must equal THROUGHPUT_ONLY's N
TIMED_STEPS = "levelfield_timed_steps"
# Rules 1.2: every call of train_steps inside run_start..run_stop as two lines, an INTERVAL_START and an
# INTERVAL_END, each with the value {"phase": "warmup" | "timed", "first_step": the run's step index (from 0)
# of the call's first step, "steps": its steps, "time_s": the clock reading (time.time(), s) before / after
# the call} and the line's time_ms cut from that same reading; the figures above are computed from the timed
# windows' readings, and the checker recomputes them (levelfield/ground/step_windows.py, TRN027, TRN028)
STEP_WINDOW_START = "levelfield_step_window_start"
STEP_WINDOW_STOP = "levelfield_step_window_stop"
# `levelfield train --throughput-only --nproc N --scaling` (levelfield/ground/scaling.py): the 1-process
# reference timed just before, side by side ({"world_size": 1, "train_samples_per_s": its median, "runs",
# "seeds", "folder": where its logs are, relative to the run's --out}), logged at init; and the run's own
# samples/s over N x the reference's, logged beside its samples/s. Absent from every other log
SCALING_REFERENCE = "levelfield_scaling_reference"
SCALING_EFFICIENCY = "levelfield_scaling_efficiency"

# -- the recipe's parts MLPerf has no key for (the rules' hyperparameter_log_keys name them) --------
LOSS = "levelfield_loss"  # e.g. "softmax_cross_entropy"
PRECISION = "levelfield_precision"  # e.g. "fp32"
LABEL_SMOOTHING = "levelfield_label_smoothing"  # rules 1.1 image-resnet50-standard: 0.1

# -- fields of the JSON files beside the logs -----------------------------------------------------
GIT = "levelfield_git"  # in ENVIRONMENT: {"commit", "dirty", "dirty_files"}
VERSION = "levelfield_version"  # in code/levelfield.json: the levelfield release that made the runs

# Seeds fit every framework's integer seed type: the trainer draws them below this, and a logged
# `seed` outside [0, SEED_LIMIT) was not made by it.
SEED_LIMIT = 2**31

# Every key a training log may carry, for readers that walk them all.
LOG_KEYS = (
    RUN_INDEX,
    RULES_VERSION,
    PROFILE,
    SUBMITTABLE,
    QUALITY_METRIC,
    QUALITY_TARGET,
    DATASET_DIGEST,
    THROUGHPUT_ONLY,
    WARMUP_STEPS,
    FRAMEWORK,
    FRAMEWORK_VERSION,
    COMPILE_MODE,
    DETERMINISM,
    DEVICE,
    WORLD_SIZE,
    NODES,
    LOCAL_BATCH_SIZE,
    INPUT_WORKERS,
    DISTRIBUTED_BACKEND,
    LAUNCHER,
    SYSTEM_FINGERPRINT,
    ENVIRONMENT,
    TIME_TO_FIRST_STEP_S,
    PEAK_RSS_MIB,
    PEAK_DEVICE_MEMORY_MIB,
    DEVICE_MEMORY_USED_MIB,
    ENERGY_J,
    SAMPLE_INTERVAL_MS,
    PEAK_TREE_RSS_MIB,
    TREE_PROCESSES,
    PROCESS_CPU_S,
    PROCESS_CPU_SHARE,
    HOST_CPU_SHARE,
    OTHERS_CPU_SHARE,
    CPU_ENERGY_J,
    PEAK_DEVICE_MEMORY_USED_MIB,
    PRICE_USD,
    TRAIN_SAMPLES_PER_S,
    STEP_TIME_MS,
    TIMED_STEPS,
    STEP_WINDOW_START,
    STEP_WINDOW_STOP,
    SCALING_REFERENCE,
    SCALING_EFFICIENCY,
    LOSS,
    PRECISION,
    LABEL_SMOOTHING,
)
