"""PyTorch ranks under torch.distributed's elastic launcher, the engine behind `torchrun`.

    levelfield train --task ctr-dlrm --framework pytorch --nproc 2 --profile smoke --out runs/ctr-ddp

The command line equivalent on one host is

    python -m torch.distributed.run --standalone --nproc-per-node N --max-restarts 0 \\
        -m levelfield.cli.launch.worker PLAN.json

and on several hosts torchrun's static rendezvous (`--rdzv-backend static
--node-rank R`) at rank 0's address from levelfield's rendezvous. Each rank
joins the process group (gloo on CPU; nccl with CUDA, untested here for lack
of a GPU; `reference/frameworks/pytorch/parallel.py`) and trains under
DistributedDataParallel:

- Batches: the global batch size stays the rules' number. Rank r trains on the
  contiguous slice r of every global batch (`World.share`) of the one data
  order `schedule.batch_order` computes, and DDP averages the gradients of the
  equal shares, which is the gradient of the global batch's mean loss.
  Batch norm keeps per-process statistics (SyncBatchNorm is CUDA-only in
  PyTorch), which the rules allow and the log states (model_bn_span).
- Failures: the agent stops every rank of its host when one exits (no
  restarts: a restart would reset the clock of a timed run); a rank stuck in
  a collective gives up after the task's init bound (`init_limit_s`).
- Signals: the agent forwards SIGINT/SIGTERM to every rank (SIGKILL after 30 s);
  rank 0 then logs `run_stop` aborted and writes summary.json, as one process does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING

from levelfield.cli.launch.failures import rank_error, shape_text, split_torch_message
from levelfield.cli.launch.rendezvous import Cluster
from levelfield.ground.errors import UserError
from levelfield.harness.options import TrainOptions
from levelfield.harness.world import Layout

if TYPE_CHECKING:  # annotations only: torch is imported only when N > 1
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

# Signals torch's agent catches and forwards to the ranks; restored in the launcher afterwards.
_AGENT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def launch(options: TrainOptions, layout: Layout, cluster: Cluster) -> str | None:
    """Start this host's `layout.nproc` ranks; returns the name of the signal that stopped them, or None."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    scratch = tempfile.mkdtemp(prefix="levelfield-ddp-")
    previous = {s: signal.getsignal(s) for s in _AGENT_SIGNALS}
    try:
        plan_file = f"{scratch}/plan.json"
        with open(plan_file, "w") as f:
            json.dump(
                {"options": asdict(options), "nodes": layout.nnodes, "addresses": cluster.addresses}, f, default=str
            )
        if layout.nnodes == 1:
            where = {"rdzv_backend": "c10d", "rdzv_endpoint": "localhost:0"}  # what torchrun --standalone sets
        else:
            # torchrun's static rendezvous: node 0 holds the store at rank 0's reserved port; each host
            # names its own address (a host's name may not resolve to the address the run uses).
            where = {
                "rdzv_backend": "static",
                "rdzv_endpoint": cluster.addresses[0],
                "rdzv_configs": {"rank": layout.node_rank},
                "local_addr": cluster.host_of(layout.first_rank),
            }
        config = LaunchConfig(
            min_nodes=layout.nnodes,
            max_nodes=layout.nnodes,
            nproc_per_node=layout.nproc,
            run_id=uuid.uuid4().hex if layout.nnodes == 1 else f"levelfield-{cluster.seed}",
            max_restarts=0,  # a failed rank fails the run: a restart would reset the clock of a timed run
            logs_specs=DefaultLogsSpecs(log_dir=f"{scratch}/logs"),  # the ranks' error files
            **where,
        )
        elastic_launch(config, sys.executable)("-u", "-m", "levelfield.cli.launch.worker", plan_file)
        return None
    except SignalException as stopped:  # the agent has already forwarded it to every rank and waited
        return stopped.sigval.name
    except ChildFailedError as failed:
        raise failure_error(failed, layout) from None
    finally:
        for s, handler in previous.items():  # the agent leaves its own handlers installed
            signal.signal(s, handler)
        shutil.rmtree(scratch, ignore_errors=True)


def failure_error(failed: ChildFailedError, layout: Layout) -> UserError:
    """The failed rank that most likely caused the others' failures, as one UserError (a rank's own UserError
    as itself): a rank that died without writing an error file (killed, or crashed) first, as levelfield's own
    launcher orders them, since its peers' errors (a broken gloo connection) are most likely the consequence;
    then the earliest error file. torch's get_first_failure() orders by timestamp alone, and a killed rank's
    is the moment torchrun noticed it, after the peer that lost its connection had written its error."""
    rank, failure = min(
        failed.failures.items(), key=lambda kv: (os.path.isfile(kv[1].error_file), kv[1].timestamp, kv[0])
    )
    message = failure.message
    if isinstance(message, dict):  # read from the rank's error file: {"message": ..., "extraInfo": ...}
        message = message.get("message", "")
    text, hint, user_error = split_torch_message(str(message))
    how = f"killed by {failure.signal_name()}" if failure.exitcode < 0 else f"exit code {failure.exitcode}"
    return rank_error(
        rank,
        how,
        text,
        user_error=user_error,
        hint=hint,
        others=sorted(r for r in failed.failures if r != rank),
        engine="torchrun",
        shape=shape_text(layout),
    )
