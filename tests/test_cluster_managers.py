"""Reading a workload manager's placement (levelfield/ground/cluster_managers.py) and refusing what contradicts it.

The environments are the variables srun and mpirun set here (Slurm 22.05, Open MPI 4.1, captured with
`srun -n 2 env` and `mpirun -n 2 env`), trimmed to what levelfield and the frameworks' resolvers read. A
contradiction is one error naming the variable and its value, from the real CLI, before any framework is
imported. The real managers start real ranks in tests/test_slurm.py and tests/test_mpirun.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, assert_user_error
from levelfield.ground.cluster_managers import (
    OPENMPI,
    PORT_FLOOR,
    PORTS_PER_RUN,
    SLURM,
    expand_hostlist,
    expand_tasks_per_node,
    launcher_record,
    managed_rank,
    port_base,
    valid_launcher_record,
)
from levelfield.ground.errors import UserError
from levelfield.harness.world import MAX_NPROC

# Task 1 of `srun --nodes 2 --ntasks-per-node 2` (job 41, step 0) on node gpu02.
SLURM_TASK = {
    "SLURM_JOB_ID": "41",
    "SLURM_STEP_ID": "0",
    "SLURM_PROCID": "3",
    "SLURM_LOCALID": "1",
    "SLURM_NTASKS": "4",
    "SLURM_STEP_NUM_TASKS": "4",
    "SLURM_STEP_NODELIST": "gpu[01-02]",
    "SLURM_STEP_NUM_NODES": "2",
    "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "SLURMD_NODENAME": "gpu02",
}
# A batch script's own shell (sbatch -n 2): a job, but no step, so no rank.
SLURM_BATCH_SHELL = {"SLURM_JOB_ID": "42", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NODELIST": "vm"}
# Rank 1 of `mpirun -n 2` on one host (Open MPI 4.1 binds each rank to a core).
OPENMPI_RANK = {
    "OMPI_COMM_WORLD_RANK": "1",
    "OMPI_COMM_WORLD_SIZE": "2",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "OMPI_MCA_orte_num_nodes": "1",
    "OMPI_MCA_orte_hnp_uri": "1358233600.0;tcp://192.0.2.2:35061;tcp6://[fd00::2]:35179",
    "OMPI_MCA_orte_bound_at_launch": "1",
}


def test_a_slurm_task_is_read_as_its_rank():
    place = managed_rank(SLURM_TASK)
    assert (place.manager, place.rank, place.size, place.local_rank, place.local_size, place.nodes) == (
        SLURM, 3, 4, 1, 2, 2,
    )  # fmt: skip
    assert place.coordinator_host == "gpu01"  # the step's first node, as JAX's and TensorFlow's resolvers take it
    assert place.record() == {"name": "slurm", "job_id": "41", "step_id": "0"}
    assert place.described == "Slurm job 41 step 0"
    assert not place.binds_cpus and not place.binds_gpus and place.gpu_index == 1  # task/none, no --gpus-per-task
    bound = managed_rank(SLURM_TASK | {"SLURM_CPU_BIND_TYPE": "mask_cpu:", "SLURM_GPUS_PER_TASK": "1"})
    assert bound.binds_cpus and bound.binds_gpus and bound.gpu_index == 0  # its one GPU is its device 0
    assert not managed_rank(SLURM_TASK | {"SLURM_CPU_BIND_TYPE": "none,"}).binds_cpus


def test_an_open_mpi_rank_is_read_and_wins_over_the_slurm_variables_of_its_daemons():
    place = managed_rank(OPENMPI_RANK)
    assert (place.manager, place.rank, place.size, place.local_rank, place.nodes) == (OPENMPI, 1, 2, 1, 1)
    assert place.coordinator_host == "192.0.2.2" and place.binds_cpus  # mpirun's address, as JAX's OmpiCluster
    assert place.record() == {"name": "openmpi", "job_id": "1358233600", "step_id": None}
    # mpirun inside a Slurm job starts its daemons with srun: they are the step's tasks, the ranks are MPI's
    assert managed_rank(SLURM_TASK | OPENMPI_RANK).manager == OPENMPI


def test_a_bare_host_and_a_batch_scripts_own_shell_start_no_ranks():
    assert managed_rank({}) is None
    assert managed_rank(SLURM_BATCH_SHELL) is None  # `levelfield train --nproc N` in a batch script: its own starter


# (the environment, the fragment the one error line must hold: the variable and its value)
BAD_ENVIRONMENTS = {
    "rank beyond the tasks": (SLURM_TASK | {"SLURM_PROCID": "4"}, "SLURM_PROCID=4: expected an integer from 0 to 3"),
    "tasks not a number": (SLURM_TASK | {"SLURM_NTASKS": "four"}, "SLURM_NTASKS=four: expected an integer from 1"),
    "two task counts": (SLURM_TASK | {"SLURM_STEP_NUM_TASKS": "8"}, "SLURM_STEP_NUM_TASKS=8: differs from"),
    "no node list": (
        {k: v for k, v in SLURM_TASK.items() if k != "SLURM_STEP_NODELIST"},
        "SLURM_STEP_NODELIST: not set, but Slurm started this process (SLURM_STEP_ID=0, SLURM_JOB_ID=41)",
    ),
    "node list unreadable": (SLURM_TASK | {"SLURM_STEP_NODELIST": "gpu[01-"}, "SLURM_STEP_NODELIST=gpu[01-: not a"),
    "nodes miscounted": (SLURM_TASK | {"SLURM_STEP_NUM_NODES": "3"}, "SLURM_STEP_NODELIST=gpu[01-02]: lists 2"),
    "uneven ranks per node": (
        SLURM_TASK | {"SLURM_STEP_TASKS_PER_NODE": "3,1"},
        "SLURM_STEP_TASKS_PER_NODE=3,1: levelfield runs the same number of ranks on each of the 2 node(s)",
    ),
    "local rank beyond the node": (SLURM_TASK | {"SLURM_LOCALID": "2"}, "SLURM_LOCALID=2: expected 0 to 1"),
    "no coordinator (Open MPI 5)": (
        {k: v for k, v in OPENMPI_RANK.items() if k != "OMPI_MCA_orte_hnp_uri"},
        "OMPI_MCA_orte_hnp_uri: not set, but Open MPI started this process",
    ),
    "coordinator unreadable": (
        OPENMPI_RANK | {"OMPI_MCA_orte_hnp_uri": "nonsense"},
        "OMPI_MCA_orte_hnp_uri=nonsense: expected JOBID.VPID;tcp://ADDRESS:PORT",
    ),
    "ranks per node times nodes": (
        OPENMPI_RANK | {"OMPI_MCA_orte_num_nodes": "2"},
        "OMPI_COMM_WORLD_LOCAL_SIZE=2: 2 ranks on this node x 2 nodes",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ENVIRONMENTS))
def test_an_environment_that_contradicts_itself_is_one_error_naming_the_variable(case):
    environ, fragment = BAD_ENVIRONMENTS[case]
    with pytest.raises(UserError) as raised:
        managed_rank(environ)
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_slurm_node_lists_and_task_counts_expand_in_order():
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("rack[1-2]-n[8-10]") == [f"rack{r}-n{n}" for r in (1, 2) for n in (8, 9, 10)]
    assert expand_hostlist("lfnode[0-1]") == ["lfnode0", "lfnode1"]
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    for bad in ("", "a,,b", "gpu[01-", "gpu[3-1]", "gpu[a]", "gpu]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def test_a_runs_ports_fit_its_ranks_above_the_ephemeral_range():
    assert PORTS_PER_RUN >= MAX_NPROC  # worker i of a node at port_base + i
    bases = {port_base(n) for n in range(1000)}
    assert min(bases) == PORT_FLOOR and max(bases) + PORTS_PER_RUN - 1 == 65535


def test_a_launcher_record_is_valid_only_as_the_trainer_writes_it():
    assert valid_launcher_record(launcher_record("slurm", "41", "0"))
    assert valid_launcher_record(launcher_record("openmpi", "1358233600"))
    assert valid_launcher_record(launcher_record("torchrun")) and valid_launcher_record(launcher_record("levelfield"))
    for bad in (
        launcher_record("pbs", "1"),  # a starter levelfield does not know
        launcher_record("slurm"),  # a manager without its job id
        launcher_record("levelfield", "41"),  # a job id without a manager
        launcher_record("slurm", "41", ""),
        {"name": "slurm", "job_id": "41"},
        "slurm",
    ):
        assert not valid_launcher_record(bad), bad


# --- the command line against the manager: refused before any framework is imported ------------------------
NO_FRAMEWORK = (
    "import sys; from levelfield.cli.main import main; code = main(sys.argv[1:]); "
    "loaded = {'torch', 'tensorflow', 'jax'} & set(sys.modules); "
    "print('frameworks imported:', sorted(loaded), file=sys.stderr) if loaded else None; sys.exit(code)"
)


def train_under(environ: dict, *args: str, tmp_path) -> subprocess.CompletedProcess:
    """`levelfield train ARGS` as a rank with `environ`, reporting any framework the refusal imported."""
    argv = [sys.executable, "-c", NO_FRAMEWORK, "train", "--task", "ctr-dlrm", "--profile", "smoke"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_"))}
    return subprocess.run(
        [*argv, "--out", str(tmp_path / "run"), *args], env=env | environ, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "environ, args, fragment",
    [
        (SLURM_TASK, ("--framework", "jax", "--nproc", "4"), "SLURM_STEP_TASKS_PER_NODE=2(x2): 2 rank(s) on each "),
        (SLURM_TASK, ("--framework", "jax", "--nnodes", "1"), "SLURM_STEP_NUM_NODES=2: 2 node(s), but --nnodes 1"),
        (SLURM_TASK, ("--framework", "jax", "--rdzv-endpoint", "198.18.0.1:29400"), "--rdzv-endpoint: Slurm job 41"),
        (SLURM_TASK, ("--framework", "pytorch", "--device", "cpu"), "--device cpu with 4 ranks (SLURM_NTASKS=4)"),
        (SLURM_TASK | {"SLURM_PROCID": "x"}, ("--framework", "jax"), "SLURM_PROCID=x: expected an integer"),
        (OPENMPI_RANK, ("--framework", "pytorch", "--nproc", "3"), "OMPI_COMM_WORLD_LOCAL_SIZE=2: 2 rank(s) on each"),
        (
            OPENMPI_RANK | {"OMPI_MCA_orte_num_nodes": "2", "OMPI_COMM_WORLD_SIZE": "4"},
            ("--framework", "tensorflow"),
            "OMPI_MCA_orte_num_nodes=2: TensorFlow ranks under mpirun run on one node",
        ),
    ],
)
def test_a_command_that_contradicts_the_manager_is_refused_before_any_framework(environ, args, fragment, tmp_path):
    result = train_under(environ, *args, tmp_path=tmp_path)
    assert_user_error(result, fragment)
    assert "frameworks imported" not in result.stderr
    assert not (tmp_path / "run").exists()


# --- docs/distributed.md's batch scripts -------------------------------------------------------------------
def documented_scripts() -> list[str]:
    text = (REPO / "docs" / "distributed.md").read_text()
    return [block for block in re.findall(r"```bash\n(.*?)```", text, re.S) if "#SBATCH" in block]


def test_the_documented_batch_scripts_start_one_rank_per_gpu_with_srun_in_every_framework():
    from levelfield.cli.main import build_parser

    frameworks = []
    for script in documented_scripts():
        directives = dict(re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", script, re.M))
        assert {"nodes", "ntasks-per-node", "gpus-per-task", "time"} <= set(directives), script
        assert directives["gpus-per-task"] == "1", script
        (start,) = [line for line in script.splitlines() if not line.startswith("#") and line.strip()]
        srun, _, command = start.partition(" levelfield ")
        assert srun.split()[0] == "srun" and "--kill-on-bad-exit=1" in srun.split(), start
        args = build_parser().parse_args(command.split())  # a command levelfield accepts as written
        assert args.command == "train" and args.nproc is None and args.nnodes is None, start
        frameworks.append(args.framework)
    assert sorted(frameworks) == ["jax", "pytorch", "tensorflow"]
