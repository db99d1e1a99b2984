"""Bit-identical random primitives for the generated datasets (numpy only).

    from levelfield.reference.synthetic import RawStream
    stream = RawStream(seed=20261122, stream=RawStream.TRAIN)
    digits = stream.integers(1000, high=10)        # int64, shape (1000,)
    x = stream.uniform_float32(13)                  # float32 in [0, 1)

Why this module exists: a generated dataset is pinned in the rules by the
SHA-256 of its arrays, so every machine and every numpy version must produce
the same bytes. numpy guarantees that a BitGenerator's raw stream
(`PCG64.random_raw`) and `SeedSequence` never change, but NOT the
distribution methods of `Generator` (`integers`, `random`, `zipf`, ...),
whose algorithms have changed between releases. So everything here is built
from raw uint64 words with exact integer or exactly-rounded float arithmetic:

- uniform floats use the top 53 (or 24) bits scaled by a power of two: exact;
- integers use `raw % high` (bias <= high / 2**64, far below any test's power);
- skewed categories use integer weights, an integer cumulative sum and a
  binary search: no floats at all;
- no transcendental functions (exp, log, pow with a float exponent): libm may
  differ in the last ulp between platforms. `+ - * /` on IEEE doubles are
  correctly rounded everywhere, so elementwise expressions are reproducible;
- no reductions (`np.sum`, `@`): their association order may depend on the
  SIMD code path; callers accumulate term by term with `+=` in a fixed order.

Each call consumes exactly n raw words (one per value), so the position of
every value in the stream is fixed by the order of calls in the generator.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64


class RawStream:
    """Ordered draws from one PCG64 sub-stream, derived from (seed, stream id)."""

    # Sub-stream ids; a generator uses one per purpose so that e.g. changing the
    # number of eval samples never shifts the training data.
    EFFECTS = 0  # planted model parameters (weights, permutations)
    TRAIN = 1
    EVAL = 2

    def __init__(self, seed: int, stream: int):
        # SeedSequence with a spawn key is numpy's documented way to derive
        # independent child streams; its algorithm is frozen like PCG64's.
        self._bits = np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(int(stream),)))

    def raw(self, n: int) -> np.ndarray:
        """n raw uint64 words."""
        return self._bits.random_raw(int(n))

    def uniform(self, n: int) -> np.ndarray:
        """float64 in [0, 1): the top 53 bits times 2**-53 (exact, 2**53 equally likely values)."""
        return (self.raw(n) >> _U64(11)).astype(np.float64) * 2.0**-53

    def uniform_float32(self, n: int) -> np.ndarray:
        """float32 in [0, 1): the top 24 bits times 2**-24 (exact in float32)."""
        return (self.raw(n) >> _U64(40)).astype(np.float32) * np.float32(2.0**-24)

    def symmetric(self, n: int, scale: float) -> np.ndarray:
        """float64 uniform in [-scale, scale)."""
        return (2.0 * self.uniform(n) - 1.0) * scale

    def integers(self, n: int, high: int) -> np.ndarray:
        """int64 uniform in [0, high), by `raw % high` (integer math)."""
        if not 1 <= high < 2**32:
            raise ValueError(f"high must be in [1, 2**32), got {high}")
        return (self.raw(n) % _U64(high)).astype(np.int64)

    def permutation(self, n: int) -> np.ndarray:
        """A random permutation of range(n): argsort of n raw words (stable sort, so ties cannot vary)."""
        return np.argsort(self.raw(n), kind="stable").astype(np.int64)

    def categorical(self, n: int, weights: np.ndarray) -> np.ndarray:
        """int64 indices drawn with probability weights[k] / sum(weights); weights are int64."""
        cumulative = np.cumsum(np.asarray(weights, dtype=np.int64))  # exact: integers
        total = int(cumulative[-1])
        if total <= 0 or total >= 2**62:
            raise ValueError(f"sum of weights must be in (0, 2**62), got {total}")
        u = (self.raw(n) % _U64(total)).astype(np.int64)  # uniform in [0, total)
        return np.searchsorted(cumulative, u, side="right").astype(np.int64)


def zipf_weights(n: int, scale: int = 2**40) -> np.ndarray:
    """Integer Zipf(s=1) weights floor(scale / (k+1)) for k in range(n), int64.

    Rank k is drawn (k+1) times less often than rank 0, the long-tail shape of
    real click logs; integer division keeps it exact on every machine.
    """
    return scale // np.arange(1, n + 1, dtype=np.int64)


def rational_squash(z: np.ndarray) -> np.ndarray:
    """Map a real score to a probability in (0, 1): 0.5 + 0.5 z / (1 + |z|).

    A sigmoid would need exp(); this has the same shape (odd, monotone,
    0.5 at 0) with only correctly rounded operations.
    """
    return 0.5 + 0.5 * z / (1.0 + np.abs(z))
