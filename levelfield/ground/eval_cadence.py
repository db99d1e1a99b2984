"""When a training run evaluates, and the epoch number each evaluation is logged with.

    from levelfield.ground.eval_cadence import EvalCadence
    cadence = EvalCadence.from_rules(training, steps_per_epoch=64, global_batch_size=256)
    cadence.points()            # [(16, 0.25), (32, 0.5), ...]: (global step, epoch_num), in order
    cadence.breaks(epoch=2)     # {16: 1.25, 32: 1.5, ...}: step within epoch 2 -> epoch_num

The trainer evaluates after the steps this names and the checker (TRN019)
compares every logged eval's epoch_num with the same list, so the two cannot
disagree about the schedule. Two cadences exist, one per rules generation:

- `eval_every_epochs` (rules 1.0): after every k-th epoch; epoch_num is the
  epoch, an integer.
- `eval_every_samples` (rules 1.1): within each epoch, after the step at which
  the epoch's samples so far reach the next multiple of N, and after the
  epoch's last step, so time to target has a resolution of N samples rather
  than a whole epoch; epoch_num is the fraction of epochs trained,
  `global step / steps per epoch` (MLPerf logs fractional epochs the same way),
  e.g. 2.25 a quarter into the third epoch. Counting per epoch keeps every
  epoch's end an eval point, as under 1.0, when the batch size does not divide
  the epoch (an epoch is its `train_samples // global_batch_size` full steps).

Either way the last step of the last epoch is always evaluated, so a run that
trains all max_epochs still ends with a score.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvalCadence:
    steps_per_epoch: int
    max_epochs: int
    global_batch_size: int
    every_epochs: int | None = None  # rules 1.0
    every_samples: int | None = None  # rules 1.1

    @classmethod
    def from_rules(cls, training: dict, steps_per_epoch: int, global_batch_size: int) -> EvalCadence:
        """The cadence a task's `training` section (for the run's profile) sets; ValueError when it
        names neither or both, or a count below 1 (the rules schema already refuses those)."""
        every_epochs, every_samples = training.get("eval_every_epochs"), training.get("eval_every_samples")
        if (every_epochs is None) == (every_samples is None):
            raise ValueError("the rules must set exactly one of eval_every_epochs and eval_every_samples")
        for name, value in (("steps_per_epoch", steps_per_epoch), ("global_batch_size", global_batch_size)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        return cls(
            steps_per_epoch=steps_per_epoch,
            max_epochs=training["max_epochs"],
            global_batch_size=global_batch_size,
            every_epochs=every_epochs,
            every_samples=every_samples,
        )

    @property
    def fractional(self) -> bool:
        """True when epoch_num is a fraction (sample cadence), False when it is the epoch (epoch cadence)."""
        return self.every_samples is not None

    def epoch_num(self, step: int) -> int | float:
        """What an eval after global step `step` (counted from 1) logs as epoch_num."""
        if self.fractional:
            return step / self.steps_per_epoch
        return -(-step // self.steps_per_epoch)  # the epoch the step belongs to

    def breaks(self, epoch: int) -> dict[int, int | float]:
        """The evaluations within `epoch` (counted from 1): step within the epoch (1..steps_per_epoch,
        the eval follows that step) -> epoch_num, in step order. Computed from the cadence, not by
        walking the steps: the checker asks for every epoch of every log it reads."""
        per_epoch = self.steps_per_epoch
        if self.fractional:
            # The epoch's samples reach the k-th multiple of every_samples within step ceil(k * N / batch).
            batch, every = self.global_batch_size, self.every_samples
            ends = {-(-k * every // batch) for k in range(1, per_epoch * batch // every + 1)} | {per_epoch}
        else:
            ends = {per_epoch} if epoch % self.every_epochs == 0 or epoch == self.max_epochs else set()
        first = (epoch - 1) * per_epoch
        return {end: self.epoch_num(first + end) for end in sorted(ends)}

    def points(self) -> list[tuple[int, int | float]]:
        """Every (global step, epoch_num) the run evaluates after, in order."""
        return [
            ((epoch - 1) * self.steps_per_epoch + end, num)
            for epoch in range(1, self.max_epochs + 1)
            for end, num in self.breaks(epoch).items()
        ]
