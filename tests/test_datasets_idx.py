"""Fashion-MNIST: the real files load, digests are checked before parsing, the IDX reader rejects bad files.

.venv/bin/python -m pytest tests/test_datasets_idx.py -q
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from levelfield.ground.errors import UserError
from levelfield.reference.datasets import load_dataset, verify_dataset
from levelfield.reference.fmnist_resnet.common.dataset import DATA_DIR_ENV, read_idx
from levelfield.rules import load_suite

TASK = load_suite().task("fmnist-resnet")
FMNIST_DIR = Path(TASK.dataset["default_dir"])


@pytest.fixture(autouse=True)
def no_env_data_dir(monkeypatch):
    """Tests choose the data folder themselves; a developer's $LEVELFIELD_DATA_DIR must not leak in."""
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


@pytest.fixture
def fmnist_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "fmnist"
    folder.mkdir()
    for entry in TASK.dataset["files"].values():
        shutil.copyfile(FMNIST_DIR / entry["file"], folder / entry["file"])
    return folder


def flip_byte(path: Path, offset: int) -> str:
    """Flip every bit of one byte; return the file's new SHA-256."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return hashlib.sha256(data).hexdigest()


def test_real_fashion_mnist_loads_with_rules_shapes_and_balanced_classes():
    arrays = load_dataset(TASK)
    assert list(arrays) == ["train_images", "train_labels", "eval_images", "eval_labels"]
    assert arrays["train_images"].shape == (60000, 28, 28)
    assert arrays["eval_images"].shape == (10000, 28, 28)
    assert arrays["train_labels"].shape == (60000,) and arrays["eval_labels"].shape == (10000,)
    assert all(a.dtype == np.uint8 for a in arrays.values())
    for labels, per_class in ((arrays["train_labels"], 6000), (arrays["eval_labels"], 1000)):
        assert labels.min() == 0 and labels.max() == 9
        assert np.bincount(labels, minlength=10).tolist() == [per_class] * 10
    # Real images, not zeros: pixels span the full byte range, mostly background.
    assert arrays["train_images"].max() == 255 and 0.2 < (arrays["train_images"] > 0).mean() < 0.8


def test_verify_reports_every_file_with_expected_and_actual_digest():
    report = verify_dataset(TASK)
    assert report.ok and report.source == str(FMNIST_DIR)
    assert [Path(c.what).name for c in report.checks] == [e["file"] for e in TASK.dataset["files"].values()]
    assert [c.actual for c in report.checks] == [e["sha256"] for e in TASK.dataset["files"].values()]


def test_corrupted_byte_is_caught_by_digest_before_parsing(fmnist_copy: Path):
    path = fmnist_copy / "t10k-labels-idx1-ubyte.gz"
    actual = flip_byte(path, 0)  # breaks the gzip magic: a parser would complain about gzip, not SHA-256
    expected = TASK.dataset["files"]["eval_labels"]["sha256"]
    with pytest.raises(UserError) as info:
        load_dataset(TASK, data_dir=fmnist_copy)
    assert str(info.value) == f"{path}: SHA-256 mismatch (found {actual}, expected {expected})"
    assert "apt-get install --reinstall dataset-fashion-mnist" in info.value.hint
    report = verify_dataset(TASK, data_dir=fmnist_copy)
    assert not report.ok and [c.ok for c in report.checks] == [True, True, True, False]


def test_missing_file_names_it_and_the_folder(fmnist_copy: Path):
    (fmnist_copy / "train-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(UserError) as info:
        verify_dataset(TASK, data_dir=fmnist_copy)
    assert f"{fmnist_copy / 'train-labels-idx1-ubyte.gz'}: file not found" in str(info.value)
    assert "apt-get install -y dataset-fashion-mnist" in info.value.hint


def test_search_order_argument_then_env_then_default(fmnist_copy: Path, tmp_path: Path, monkeypatch):
    assert verify_dataset(TASK).source == str(FMNIST_DIR)  # default_dir
    monkeypatch.setenv(DATA_DIR_ENV, str(fmnist_copy))
    assert verify_dataset(TASK).source == str(fmnist_copy)  # env beats default
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    assert verify_dataset(TASK, data_dir=FMNIST_DIR).source == str(FMNIST_DIR)  # argument beats env
    with pytest.raises(UserError, match=r"nowhere: fashion-mnist data folder not found \(from \$LEVELFIELD"):
        verify_dataset(TASK)  # a named folder is never skipped


# --- the IDX reader on crafted files --------------------------------------------------------------


def write_idx(path: Path, type_byte: int, dims: list[int], payload: bytes, compress: bool = True) -> Path:
    data = bytes([0, 0, type_byte, len(dims)]) + struct.pack(f">{len(dims)}I", *dims) + payload
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def test_reader_parses_a_valid_file(tmp_path: Path):
    values = np.arange(24, dtype=np.uint8)
    path = write_idx(tmp_path / "x.gz", 0x08, [2, 3, 4], values.tobytes())
    out = read_idx(path, [2, 3, 4])
    assert out.dtype == np.uint8 and out.shape == (2, 3, 4) and out.ravel().tolist() == values.tolist()
    labels = write_idx(tmp_path / "y", 0x08, [5], bytes([9, 0, 3, 1, 2]), compress=False)
    assert read_idx(labels, [5]).tolist() == [9, 0, 3, 1, 2]


def test_reader_parses_big_endian_int32(tmp_path: Path):
    path = write_idx(tmp_path / "i.gz", 0x0C, [3], struct.pack(">3i", -1, 7, 70000))
    assert read_idx(path, [3], "int32").tolist() == [-1, 7, 70000]


@pytest.mark.parametrize(
    "type_byte, dims, shape, found",
    [
        (0x0D, [2, 3, 4], [2, 3, 4], "0x00000d03"),  # float data where uint8 is expected
        (0x08, [24], [2, 3, 4], "0x00000801"),  # a 1-D (labels) file where 3-D images are expected
    ],
)
def test_reader_rejects_wrong_magic(tmp_path: Path, type_byte, dims, shape, found):
    path = write_idx(tmp_path / "bad.gz", type_byte, dims, bytes(24 * (4 if type_byte == 0x0D else 1)))
    with pytest.raises(UserError) as info:
        read_idx(path, shape)
    assert str(info.value).startswith(f"{path}: IDX magic {found}, expected 0x00000803 (uint8, 3 dimensions)")


def test_reader_rejects_wrong_dimensions(tmp_path: Path):
    path = write_idx(tmp_path / "dims.gz", 0x08, [2, 3, 5], bytes(30))
    with pytest.raises(UserError, match=r"dims\.gz: IDX dimensions \[2, 3, 5\], expected \[2, 3, 4\]"):
        read_idx(path, [2, 3, 4])


def test_reader_rejects_truncated_payload(tmp_path: Path):
    path = write_idx(tmp_path / "short.gz", 0x08, [2, 3, 4], bytes(23))
    with pytest.raises(UserError, match=r"short\.gz: truncated: 23 payload bytes, expected 24"):
        read_idx(path, [2, 3, 4])


def test_reader_rejects_trailing_data(tmp_path: Path):
    path = write_idx(tmp_path / "long.gz", 0x08, [4], bytes(5))
    with pytest.raises(UserError, match=r"long\.gz: trailing data after the 4 payload bytes"):
        read_idx(path, [4])


def test_reader_rejects_truncated_and_non_gzip_files(tmp_path: Path):
    path = write_idx(tmp_path / "cut.gz", 0x08, [1000], (bytes(range(256)) * 4)[:1000])
    path.write_bytes(path.read_bytes()[:-20])  # cut inside the deflate stream / trailer
    with pytest.raises(UserError, match=r"cut\.gz: not a valid gzip file"):
        read_idx(path, [1000])
    plain = tmp_path / "plain.gz"
    plain.write_bytes(b"not gzip at all")
    with pytest.raises(UserError, match=r"plain\.gz: not a valid gzip file"):
        read_idx(plain, [4])
