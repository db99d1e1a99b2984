"""Generated datasets cached on disk between processes (reference/dataset_cache.py), never trusted unchecked."""

from __future__ import annotations

import numpy as np
import pytest

from levelfield.reference import dataset_cache, datasets
from levelfield.rules import load_suite

TASK = load_suite().task("ctr-dlrm")  # a generated dataset of 24 MiB, made in a fraction of a second


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(dataset_cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def generations(monkeypatch):
    """How often the generator ran in this test."""
    calls = []
    real = datasets.generate_arrays
    monkeypatch.setattr(datasets, "generate_arrays", lambda task: calls.append(task.id) or real(task))
    return calls


def test_the_second_load_comes_from_the_cache_and_is_the_same(cache, generations):
    first = datasets.load_dataset(TASK)
    where = dataset_cache.folder(TASK.dataset)
    assert where.parent == cache and where.name == f"{TASK.dataset['generator']}-{TASK.dataset['sha256']}"
    assert sorted(p.name for p in where.iterdir()) == sorted(f"{name}.npy" for name in TASK.dataset["arrays"])
    again, report = datasets.load_verified(TASK)
    assert generations == [TASK.id] and report.ok
    assert all(np.array_equal(first[name], again[name]) for name in first)


def test_a_damaged_cache_is_regenerated_and_replaced(cache, generations):
    datasets.load_dataset(TASK)
    damaged = dataset_cache.folder(TASK.dataset) / f"{next(iter(TASK.dataset['arrays']))}.npy"
    raw = bytearray(damaged.read_bytes())
    raw[-1] ^= 0xFF  # one bit of the last value
    damaged.write_bytes(bytes(raw))
    arrays, report = datasets.load_verified(TASK)
    assert report.ok and generations == [TASK.id, TASK.id]
    assert datasets.arrays_digest(arrays, list(TASK.dataset["arrays"])) == TASK.dataset["sha256"]
    assert damaged.read_bytes() != bytes(raw)  # the cache holds good arrays again


def test_verifying_the_dataset_always_runs_the_generator(cache, generations):
    datasets.load_dataset(TASK)
    assert datasets.verify_dataset(TASK).ok and generations == [TASK.id, TASK.id]


def test_switched_off_nothing_is_written(tmp_path, monkeypatch, generations):
    monkeypatch.setenv(dataset_cache.CACHE_ENV, dataset_cache.OFF)
    monkeypatch.setenv("HOME", str(tmp_path))
    datasets.load_dataset(TASK)
    datasets.load_dataset(TASK)
    assert generations == [TASK.id, TASK.id] and dataset_cache.folder(TASK.dataset) is None
    assert list(tmp_path.iterdir()) == []


def test_a_cache_that_cannot_be_written_is_no_cache(tmp_path, monkeypatch, generations):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(dataset_cache.CACHE_ENV, str(blocker / "cache"))
    assert datasets.load_dataset(TASK) and datasets.load_dataset(TASK)
    assert generations == [TASK.id, TASK.id]
