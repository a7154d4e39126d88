"""CIFAR10's test split through ``torchvision.datasets.CIFAR10``.

torchvision's integrity check wants all five training batches even for the test
split; we read only the test split, so a subclass lists no training files. With
``verify_checksums=False`` it also drops the md5 sums (used by the tests, whose
small files are not the real ones).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from bandit_gym.datasets.errors import DatasetFileError, DatasetNotFoundError, import_optional

N_TEST_IMAGES = 10_000


def _torchvision_cifar10():
    return import_optional("torchvision.datasets", "CIFAR10", distribution="torchvision").CIFAR10


def _classes(verify_checksums: bool):
    torchvision_cifar10 = _torchvision_cifar10()

    class CIFAR10TestSplit(torchvision_cifar10):
        train_list = []

    class CIFAR10TestSplitUnchecked(CIFAR10TestSplit):
        test_list = [["test_batch", None]]
        meta = {**torchvision_cifar10.meta, "md5": None}

    return CIFAR10TestSplit if verify_checksums else CIFAR10TestSplitUnchecked


def load_cifar10_test(
    root: Path, verify_checksums: bool, missing_message: str
) -> tuple[np.ndarray, np.ndarray, list[str], Path]:
    """Test images as ``(N, 3072)`` float32 in ``[-1, 1]`` (``(x / 255 - 0.5) / 0.5``, flattened C, H, W).

    Returns ``(features, labels, class_names, path of test_batch)``.
    """
    folder = Path(root) / "cifar-10-batches-py"
    batch, meta = folder / "test_batch", folder / "batches.meta"
    for path in (batch, meta):
        if not path.is_file():
            raise DatasetNotFoundError(missing_message)
    cls = _classes(verify_checksums)
    try:
        data = cls(root=str(root), train=False, download=False)
    except RuntimeError as exc:  # torchvision: "Dataset not found or corrupted"
        raise DatasetFileError(
            f"{batch} or {meta}: md5 differs from torchvision's ({exc}); delete {folder} and download again"
        ) from None
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise DatasetFileError(
            f"{batch} or {meta}: not a readable CIFAR10 pickle ({type(exc).__name__}: {exc}); "
            "the file is truncated or damaged"
        ) from None
    images = np.asarray(data.data)  # (N, 32, 32, 3) uint8, HWC
    if images.ndim != 4 or images.shape[1:] != (32, 32, 3):
        raise DatasetFileError(f"{batch}: expected images of shape (N, 32, 32, 3), got {images.shape}")
    x = images.transpose(0, 3, 1, 2).reshape(len(images), -1).astype(np.float32)  # (N, 3072) as C, H, W
    x = (x / 255.0 - 0.5) / 0.5  # torchvision ToTensor then Normalize(0.5, 0.5): the paper's code
    return x, np.asarray(data.targets, dtype=np.int64), list(data.classes), batch


def download_cifar10(root: Path) -> Path:
    """Download CIFAR10 (the whole 170 MB archive; torchvision has no test-only file) into ``root``."""
    torchvision_cifar10 = _torchvision_cifar10()
    Path(root).mkdir(parents=True, exist_ok=True)
    torchvision_cifar10(root=str(root), train=False, download=True)
    return Path(root) / "cifar-10-batches-py"
