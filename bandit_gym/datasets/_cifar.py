"""CIFAR10's test split, read from torchvision's layout without running code from the files.

The files are Python pickles: ``test_batch`` a dict of the images (a numpy uint8 array, one
row per image), their labels and file names; ``batches.meta`` a dict of the class names.
Unpickling runs whatever callable a file names, and with ``verify_checksums=False`` (stand-in
data) no md5 sum vouches for the files, so they are read by :class:`_BatchUnpickler`, which
builds only what those dicts hold: dicts, lists, strings, bytes and numbers (pickle's own
opcodes) and numpy arrays (the only callables it lets a file name). Any other callable is
refused with :class:`DatasetFileError` before it could run, whatever ``verify_checksums`` says;
``verify_checksums=True`` also compares the files' md5 sums with torchvision's first.
torchvision is used for its md5 sums and its download, never to read the files.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from bandit_gym.datasets.errors import DatasetFileError, DatasetNotFoundError, import_optional

N_TEST_IMAGES = 10_000
PIXELS = 3 * 32 * 32  # one image: channels, rows, columns

#: The callables a CIFAR10 pickle names: numpy's array and dtype rebuilders (both spellings of numpy's
#: core module: files written with numpy 1 and 2) and ``_codecs.encode`` (bytes in Python 3's protocol 2).
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
}


class _Refused(pickle.UnpicklingError):
    """A pickle named a callable that a CIFAR10 batch never holds."""


class _BatchUnpickler(pickle.Unpickler):
    """An unpickler that builds plain data and numpy arrays only (see the module docstring)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise _Refused(f"{module}.{name}")
        return super().find_class(module, name)


def _torchvision_cifar10():
    return import_optional("torchvision.datasets", "CIFAR10", distribution="torchvision").CIFAR10


def _read_pickle(path: Path, folder: Path) -> dict[str, Any]:
    """One CIFAR10 pickle as a dict with str keys, read without running code from it."""
    try:
        with path.open("rb") as fh:
            content = _BatchUnpickler(fh, encoding="latin1").load()  # latin1: the files are Python 2 pickles
    except _Refused as exc:
        raise DatasetFileError(
            f"{path}: refused to unpickle {exc}: a CIFAR10 file holds only dicts, lists, strings, numbers and numpy "
            f"arrays, so this one is not a CIFAR10 file (loading it could run code); delete {folder} and download "
            "again"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, UnicodeDecodeError, AttributeError) as exc:
        raise DatasetFileError(
            f"{path}: not a readable CIFAR10 pickle ({type(exc).__name__}: {exc}); the file is truncated or damaged"
        ) from None
    if not isinstance(content, dict):
        raise DatasetFileError(f"{path}: expected a CIFAR10 dict, got {type(content).__name__}")
    return {key.decode("latin1") if isinstance(key, bytes) else key: value for key, value in content.items()}


def _check_md5(path: Path, expected: str, folder: Path) -> None:
    digest = hashlib.md5()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise DatasetFileError(f"{path}: md5 differs from torchvision's ({digest.hexdigest()}, expected {expected}); "
                               f"delete {folder} and download again")


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
    if verify_checksums:
        torchvision_cifar10 = _torchvision_cifar10()
        _check_md5(batch, dict(torchvision_cifar10.test_list)["test_batch"], folder)
        _check_md5(meta, torchvision_cifar10.meta["md5"], folder)
    content, names = _read_pickle(batch, folder), _read_pickle(meta, folder)
    images = content.get("data")
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.size % PIXELS:
        what = f"{images.dtype} array of shape {images.shape}" if isinstance(images, np.ndarray) else repr(images)[:80]
        raise DatasetFileError(f"{batch}: expected 'data', a uint8 array of {PIXELS} values per image, got {what}")
    images = images.reshape(-1, PIXELS)  # (N, 3072): CIFAR's rows are channels, rows, columns already
    labels = content.get("labels", content.get("fine_labels"))
    classes = names.get("label_names")
    if not isinstance(classes, list) or not all(isinstance(c, (str, bytes)) for c in classes):
        raise DatasetFileError(f"{meta}: expected 'label_names', a list of class names, got {repr(classes)[:80]}")
    classes = [c.decode("latin1") if isinstance(c, bytes) else c for c in classes]
    if (not isinstance(labels, list) or len(labels) != len(images)
            or not all(isinstance(v, int) and 0 <= v < len(classes) for v in labels)):
        raise DatasetFileError(f"{batch}: expected 'labels', a list of {len(images)} class indices in "
                               f"[0, {len(classes)}), got {repr(labels)[:80]}")
    x = images.astype(np.float32)  # (N, 3072)
    x = (x / 255.0 - 0.5) / 0.5  # torchvision ToTensor then Normalize(0.5, 0.5): the paper's code
    return x, np.asarray(labels, dtype=np.int64), classes, batch


def download_cifar10(root: Path) -> Path:
    """Download CIFAR10 (the whole 170 MB archive; there is no test-only file) into ``root``, md5-checked."""
    torchvision_cifar10 = _torchvision_cifar10()
    from torchvision.datasets.utils import download_and_extract_archive

    Path(root).mkdir(parents=True, exist_ok=True)
    download_and_extract_archive(torchvision_cifar10.url, str(root), filename=torchvision_cifar10.filename,
                                 md5=torchvision_cifar10.tgz_md5)
    return Path(root) / "cifar-10-batches-py"
