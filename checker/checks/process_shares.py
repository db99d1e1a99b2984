"""What each process of a multi-process run took: its share of every global batch, and the samples batch norm
normalised over, against the batch size and the rules (`batch_norm_spans`).

N processes train the model one process trains only if each takes an equal share of every global batch
and the gradients are averaged; batch norm over several processes is the one place the math may differ,
by a choice the rules allow per task (statistics over each rank's share or over the whole global batch,
as MLPerf's ResNet allows) and the log states as MLPerf's model_bn_span.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mlperf_logging.mllog import constants as K

from levelfield.checker.checks.training import stated_differs, training_logs
from levelfield.checker.findings import Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import plain_int

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

_PRODUCE = "submit the logs `levelfield train` wrote, unedited"


def allowed_bn_spans(batch: int, world_size: int, spans: list[str]) -> dict[int, str]:
    """model_bn_span values the rules allow: {samples: span name}; one process normalises over the global batch."""
    if world_size == 1:
        return {batch: "global"}
    return {{"global": batch, "per_process": batch // world_size}[span]: span for span in spans}


@check("TRN022", "process-share-mismatch", area="training")
def process_share_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training log's levelfield_local_batch_size is not global_batch_size / levelfield_world_size,
    or its model_bn_span is a span the task's rules do not allow: the global batch, or (with several
    processes, where the rules list per_process in batch_norm_spans) a process's share of it.
    Why: N processes take the steps of one only with equal shares of every global batch; the batch-norm
    span is the one difference the rules permit, and only the spans they list.
    Bad: levelfield_local_batch_size 512 with global_batch_size 1024 on 4 processes; model_bn_span 128 on
    2 processes under rules 1.0 (which allow no batch norm over several processes).
    Fix: submit the logs `levelfield train` wrote, unedited, under rules that allow the span.
    """
    for training, log in training_logs(sub):
        batch, world = log.first(K.GLOBAL_BATCH_SIZE), log.first(LK.WORLD_SIZE)
        if batch is None or world is None or not (plain_int(batch.value) and plain_int(world.value)):
            continue  # TRN001 / TRN017 report a missing or malformed count
        if world.value < 1 or batch.value % world.value:
            continue
        yield from stated_differs(
            log,
            LK.LOCAL_BATCH_SIZE,
            batch.value // world.value,
            f"{LK.LOCAL_BATCH_SIZE} is not global_batch_size {batch.value} / {LK.WORLD_SIZE} {world.value}",
            hint=_PRODUCE,
        )
        span = log.first(K.MODEL_BN_SPAN)
        if span is None:
            continue
        rules = ctx.task(training.task).training.get("batch_norm_spans", [])
        allowed = allowed_bn_spans(batch.value, world.value, rules)
        if span.value not in allowed or not plain_int(span.value):
            described = ", ".join(f"{n} ({name})" for n, name in allowed.items()) or "none"
            yield Finding.at(
                log.path,
                f"model_bn_span is not a span the rules allow for {world.value} processes "
                f"(batch_norm_spans: {rules or 'none'})",
                line=span.lineno,
                found=span.value,
                expected=described,
                hint=_PRODUCE,
            )
