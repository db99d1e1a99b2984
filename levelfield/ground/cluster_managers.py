"""Workload managers that start a run's ranks themselves: Slurm (`srun`) and Open MPI (`mpirun`).

    place = managed_rank(os.environ)        # None on a bare host; UserError for an environment that contradicts itself
    place.rank, place.size, place.local_rank, place.local_size, place.nodes
    place.record()                          # {"name": "slurm", "job_id": "41", "step_id": "0"}: levelfield_launcher

`srun levelfield train ...` and `mpirun -n N levelfield train ...` start one
levelfield process per manager task; each is one rank of the run. This module
reads where the manager placed this process from the manager's own variables,
the ones the frameworks' resolvers read too (`jax.distributed.initialize`'s
SlurmCluster and OmpiCluster, TensorFlow's SlurmClusterResolver), and checks
that they describe one run levelfield can train before any framework starts:

- Slurm, inside a job step (SLURM_STEP_ID set: a batch script's own shell is
  not a step, and starts no ranks): SLURM_PROCID, SLURM_NTASKS (and
  SLURM_STEP_NUM_TASKS, TensorFlow's name, equal to it), SLURM_LOCALID,
  SLURM_STEP_NODELIST, SLURM_STEP_NUM_NODES, SLURM_STEP_TASKS_PER_NODE,
  SLURM_JOB_ID. The coordinator is the step's first node, as JAX's and
  TensorFlow's resolvers take it.
- Open MPI 4 (`mpirun`): OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE,
  OMPI_MCA_orte_num_nodes and OMPI_MCA_orte_hnp_uri, whose address (mpirun's
  host) is the coordinator, as JAX's OmpiCluster takes it. Open MPI under
  Slurm sets both families (Slurm's then describe Open MPI's daemons): Open MPI
  wins, as in JAX.

Ports: a run's rendezvous ports come from the job's id, in 61440-65535 (above
Linux's ephemeral range, as JAX picks its coordinator's port): PyTorch's store
at `port_base` (unless MASTER_PORT is set), TensorFlow's workers at
`port_base + local rank`; JAX picks its own the same way.

Ground floor: no framework, no CLI; the launcher (levelfield/cli/launch/managed.py) and each framework's
join (reference/frameworks/<framework>/parallel.py) read the same ManagedRank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from levelfield.ground.errors import UserError

SLURM, OPENMPI = "slurm", "openmpi"
TORCHRUN, LEVELFIELD = "torchrun", "levelfield"  # the starters of a bare host's ranks (or its one process)
LAUNCHERS = (SLURM, OPENMPI, TORCHRUN, LEVELFIELD)  # every name levelfield_launcher may hold
MANAGED = (SLURM, OPENMPI)
MANAGER_NAMES = {SLURM: "Slurm", OPENMPI: "Open MPI"}

PORT_FLOOR = 61440  # above Linux's ephemeral ports (32768-60999): no OS-chosen port collides
PORTS_PER_RUN = 64  # a run's ports: port_base + local rank, at most MAX_NPROC ranks on a node
PORT_SLOTS = (65536 - PORT_FLOOR) // PORTS_PER_RUN  # 64 slots; jobs whose ids differ by 64 share one
_BIND_NONE = re.compile(r"^(none|no|null)?$", re.IGNORECASE)


@dataclass(frozen=True)
class ManagedRank:
    """Where a workload manager placed this process: one rank of a run it started."""

    manager: str  # SLURM | OPENMPI
    rank: int
    size: int  # ranks over every node
    local_rank: int
    local_size: int  # ranks on each node (the same on every node)
    nodes: int
    coordinator_host: str  # the step's first node (Slurm), mpirun's address (Open MPI)
    port_base: int
    job_id: str
    step_id: str | None
    binds_cpus: bool  # the manager pinned this rank to its CPUs (Open MPI's default, Slurm's task/affinity)
    binds_gpus: bool  # the manager gave this rank its own GPUs (srun --gpus-per-task)
    variables: dict  # name -> value of what was read, for messages

    def record(self) -> dict:
        """The levelfield_launcher value: which manager started the ranks, its job (and step) id."""
        return launcher_record(self.manager, self.job_id, self.step_id)

    def named(self, *names: str) -> str:
        """`NAME=value` of variables this was read from, for messages."""
        return ", ".join(f"{name}={self.variables.get(name, '(not set)')}" for name in names)

    @property
    def gpu_index(self) -> int:
        """Which of the GPUs this rank sees it drives: its only one where the manager gave each task its own
        (srun --gpus-per-task), else its local rank's (one process per GPU of the node)."""
        return 0 if self.binds_gpus else self.local_rank

    @property
    def described(self) -> str:
        """e.g. "Slurm job 41 step 0", "Open MPI job 1358233601"."""
        step = f" step {self.step_id}" if self.step_id is not None else ""
        return f"{MANAGER_NAMES[self.manager]} job {self.job_id}{step}"


def launcher_record(name: str, job_id: str | None = None, step_id: str | None = None) -> dict:
    """{"name", "job_id", "step_id"}: who started a run's processes (LAUNCHERS) and the manager's ids."""
    return {"name": name, "job_id": job_id, "step_id": step_id}


LAUNCHER_DOMAIN = (
    f"{{name: one of {', '.join(LAUNCHERS)}, job_id and step_id: the manager's ids as strings "
    f"({' or '.join(MANAGED)}: a job id), else null}}"
)


def valid_launcher_record(value: object) -> bool:
    """Whether `value` is a levelfield_launcher value `launcher_record` can have made."""
    if not isinstance(value, dict) or set(value) != {"name", "job_id", "step_id"}:
        return False
    ids_ok = all(value[k] is None or (isinstance(value[k], str) and value[k]) for k in ("job_id", "step_id"))
    managed = value["name"] in MANAGED
    return value["name"] in LAUNCHERS and ids_ok and (value["job_id"] is not None) == managed


def managed_rank(environ: Mapping[str, str]) -> ManagedRank | None:
    """This process's place when a workload manager started it (Open MPI first, then a Slurm job step);
    None on a bare host. UserError naming the variable and its value when the environment cannot be one
    rank of one run."""
    if "OMPI_COMM_WORLD_SIZE" in environ or "OMPI_COMM_WORLD_RANK" in environ:
        return _openmpi(environ)
    if "SLURM_STEP_ID" in environ or "SLURM_STEPID" in environ:
        return _slurm(environ)
    return None


# -- Slurm --------------------------------------------------------------------------------------------
def _slurm(env: Mapping[str, str]) -> ManagedRank:
    read = _Reader(env, SLURM)
    size = read.integer("SLURM_NTASKS", low=1)
    if env.get("SLURM_STEP_NUM_TASKS", str(size)).strip() != str(size):  # TensorFlow's resolver reads this one
        raise read.error("SLURM_STEP_NUM_TASKS", f"differs from SLURM_NTASKS={size}")
    rank = read.integer("SLURM_PROCID", high=size - 1)
    local_rank = read.integer("SLURM_LOCALID")
    node_list = read.text("SLURM_STEP_NODELIST", hint="srun sets it in every job step: it names the coordinator")
    try:
        hosts = expand_hostlist(node_list)
    except ValueError as error:
        raise read.error("SLURM_STEP_NODELIST", f"not a Slurm node list ({error})") from None
    nodes = read.integer("SLURM_STEP_NUM_NODES", low=1)
    if len(hosts) != nodes:
        raise read.error("SLURM_STEP_NODELIST", f"lists {len(hosts)} node(s), SLURM_STEP_NUM_NODES says {nodes}")
    per_node_text = read.text("SLURM_STEP_TASKS_PER_NODE")
    try:
        per_node = expand_tasks_per_node(per_node_text)
    except ValueError:
        raise read.error("SLURM_STEP_TASKS_PER_NODE", "expected counts like 2, 2(x3) or 2,1") from None
    if len(set(per_node)) != 1 or sum(per_node) != size or len(per_node) != nodes:
        raise read.error(
            "SLURM_STEP_TASKS_PER_NODE",
            f"levelfield runs the same number of ranks on each of the {nodes} node(s), {size} in all (SLURM_NTASKS)",
            hint="start the same number of tasks on every node: srun --nodes M --ntasks-per-node N",
        )
    local_size = per_node[0]
    if local_rank >= local_size:
        raise read.error("SLURM_LOCALID", f"expected 0 to {local_size - 1} (SLURM_STEP_TASKS_PER_NODE={per_node_text})")
    job_id = read.text("SLURM_JOB_ID", "SLURM_JOBID")
    step_id = read.text("SLURM_STEP_ID", "SLURM_STEPID")
    job, step = read.number_in(job_id, read.used[-2]), read.number_in(step_id, read.used[-1])
    gpus_per_task = env.get("SLURM_GPUS_PER_TASK")
    return ManagedRank(
        manager=SLURM,
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        nodes=nodes,
        coordinator_host=hosts[0],
        port_base=port_base(job * 31 + step),
        job_id=job_id,
        step_id=step_id,
        # task/affinity binds each task and says how; task/none (or --cpu-bind=none) leaves them unbound
        binds_cpus=not _BIND_NONE.match(env.get("SLURM_CPU_BIND_TYPE", "").strip(",")),
        binds_gpus=gpus_per_task is not None and gpus_per_task.strip() not in ("", "0"),
        variables=read.values,
    )


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed node list in order: "gpu[01-03,07],login1" -> gpu01 gpu02 gpu03 gpu07 login1."""
    hosts = []
    for part in _split_outside_brackets(text):
        hosts += _expand_part(part)
    if not hosts:
        raise ValueError("no node named")
    return hosts


def _split_outside_brackets(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError("unbalanced brackets")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth or not all(parts + [current]):
        raise ValueError("unbalanced brackets or an empty name")
    return parts + [current]


def _expand_part(part: str) -> list[str]:
    """One name with bracketed ranges, "rack[1-2]-n[01-02]" -> rack1-n01 rack1-n02 rack2-n01 rack2-n02."""
    match = re.fullmatch(r"([^\[\]]*)\[([^\]]+)\](.*)", part)
    if match is None:
        if "[" in part or "]" in part or not part:
            raise ValueError(f"cannot read {part!r}")
        return [part]
    prefix, ranges, rest = match.groups()
    numbers = []
    for item in ranges.split(","):
        low, _, high = item.partition("-")
        high = high or low
        if not (low.isdigit() and high.isdigit()) or int(high) < int(low):
            raise ValueError(f"cannot read the range {item!r}")
        numbers += [f"{i:0{len(low)}d}" for i in range(int(low), int(high) + 1)]
    tails = _expand_part(rest) if rest else [""]
    return [prefix + number + tail for number in numbers for tail in tails]


def expand_tasks_per_node(text: str) -> list[int]:
    """Slurm's tasks per node: "2(x3),1" -> [2, 2, 2, 1]."""
    counts = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise ValueError(part)
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


# -- Open MPI -------------------------------------------------------------------------------------------
def _openmpi(env: Mapping[str, str]) -> ManagedRank:
    read = _Reader(env, OPENMPI)
    size = read.integer("OMPI_COMM_WORLD_SIZE", low=1)
    rank = read.integer("OMPI_COMM_WORLD_RANK", high=size - 1)
    local_size = read.integer("OMPI_COMM_WORLD_LOCAL_SIZE", low=1, high=size)
    local_rank = read.integer("OMPI_COMM_WORLD_LOCAL_RANK", high=local_size - 1)
    uri = read.text(
        "OMPI_MCA_orte_hnp_uri",
        hint="Open MPI 4's mpirun sets it: it names mpirun's address, where rank 0's coordinator listens "
        "(jax.distributed reads it too); with another MPI, start the ranks with srun or levelfield --nnodes",
    )
    address = re.search(r"tcp://([^,:;]+)|tcp6://\[([^\],]+)", uri)
    job = re.match(r"(\d+)\.", uri)
    if not address or not job:
        raise read.error("OMPI_MCA_orte_hnp_uri", "expected JOBID.VPID;tcp://ADDRESS:PORT, as Open MPI 4 writes it")
    nodes = read.integer("OMPI_MCA_orte_num_nodes", low=1)
    if local_size * nodes != size:
        raise read.error(
            "OMPI_COMM_WORLD_LOCAL_SIZE",
            f"{local_size} ranks on this node x {nodes} nodes (OMPI_MCA_orte_num_nodes) is not "
            f"OMPI_COMM_WORLD_SIZE={size}: levelfield runs the same number of ranks on every node",
            hint="give every node the same number of ranks: mpirun -n N --map-by ppr:K:node",
        )
    return ManagedRank(
        manager=OPENMPI,
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        nodes=nodes,
        coordinator_host=address.group(1) or address.group(2),
        port_base=port_base(int(job.group(1)) // 2**12),  # Open MPI's job ids are multiples of 2^12 (as JAX reads them)
        job_id=job.group(1),
        step_id=None,
        binds_cpus=env.get("OMPI_MCA_orte_bound_at_launch") == "1",
        binds_gpus=False,
        variables=read.values,
    )


def port_base(job_number: int) -> int:
    """The first of a run's PORTS_PER_RUN ports, from its job's number (every rank computes the same)."""
    return PORT_FLOOR + (job_number % PORT_SLOTS) * PORTS_PER_RUN


class _Reader:
    """Reads a manager's variables, each error naming the variable and its value."""

    def __init__(self, env: Mapping[str, str], manager: str):
        self.env, self.manager = env, manager
        self.values: dict[str, str] = {}
        self.used: list[str] = []

    def text(self, *names: str, hint: str | None = None) -> str:
        for name in names:
            if name in self.env:
                self.values[name] = self.env[name]
                self.used.append(name)
                return self.env[name]
        raise UserError(
            f"{' or '.join(names)}: not set, but {MANAGER_NAMES[self.manager]} started this process "
            f"({self._evidence()}); levelfield reads the run's layout from it",
            hint=hint or "start the ranks with srun (inside a job step) or mpirun, which set it",
        )

    def integer(self, *names: str, low: int = 0, high: int | None = None) -> int:
        text = self.text(*names)
        name = self.used[-1]
        if not text.strip().isdigit() or not low <= int(text) <= (high if high is not None else int(text)):
            expected = f"an integer from {low}" + (f" to {high}" if high is not None else "")
            raise self.error(name, f"expected {expected}")
        return int(text)

    def number_in(self, text: str, name: str) -> int:
        if not text.strip().isdigit():
            raise self.error(name, "expected an integer id")
        return int(text)

    def error(self, name: str, why: str, hint: str | None = None) -> UserError:
        return UserError(f"{name}={self.env.get(name, '(not set)')}: {why}", hint=hint)

    def _evidence(self) -> str:
        names = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_JOB_ID")
        return ", ".join(f"{n}={self.env[n]}" for n in names if n in self.env)
