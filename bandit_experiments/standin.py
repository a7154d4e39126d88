"""Stand-in data for the dataset envs, for a machine that has not got the real data: generated rows in the
loaders' cache layouts, so that a config of Figure 2 or 3 runs end to end.

    python -m bandit_experiments.standin covertype cifar10 --out DIR [--rows N] [--seed S]
    bandit-gym run configs/fig2_covertype.yaml --env-kwargs '{cache_dir: DIR, verify_checksums: false}' --out ...

THE NUMBERS SUCH A RUN PRINTS SAY NOTHING ABOUT THE REAL DATASET. A stand-in has the real dataset's
shape (features per row, classes, so the same arms and feature dimension) and nothing else of it: each
class ``j`` has a random mean ``m_j ~ N(0, s^2 I)`` and each row is its class's mean plus ``N(0, I)`` noise,
classes drawn uniformly. ``s`` sets how far apart the classes are (about 3 noise standard deviations
between two class means: a linear classifier separates them well, not perfectly). The files fail the
loaders' checks against the published data, hence ``verify_checksums: false``.

Layouts: OpenML's cache (``DIR/org/openml/www/datasets/<id>/description.xml`` and ``dataset.arff``) for
the UCI datasets; torchvision's (``DIR/cifar-10-batches-py/test_batch`` and ``batches.meta``, pixels as
uint8 ``128 + 40 x``, clipped) for CIFAR10. Both read ``cache_dir=DIR``.
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: name -> (OpenML id or None for CIFAR10, features per row, classes).
SHAPES = {"shuttle": (40685, 9, 7), "magictelescope": (1120, 10, 2), "mushroom": (24, 22, 2),
          "covertype": (1596, 54, 7), "cifar10": (None, 3072, 10)}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: Distance between two class means, in noise standard deviations (about): sets the scale s of the means.
CLASS_DISTANCE = 3.0


def class_mixture(n_rows: int, n_features: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(N, d)`` float64 and labels ``(N,)``: label uniform, row = its class's random mean + N(0, I)."""
    rng = np.random.default_rng(seed)
    scale = CLASS_DISTANCE / math.sqrt(2 * n_features)  # E||m_i - m_j|| = s sqrt(2 d)
    means = scale * rng.standard_normal((n_classes, n_features))  # (C, d)
    labels = rng.integers(0, n_classes, size=n_rows)  # (N,)
    return means[labels] + rng.standard_normal((n_rows, n_features)), labels


def write_openml(root: Path, name: str, n_rows: int, seed: int) -> Path:
    """Write a stand-in for the OpenML dataset ``name`` into the cache rooted at ``root``; returns its folder."""
    dataset_id, n_features, n_classes = SHAPES[name]
    x, labels = class_mixture(n_rows, n_features, n_classes, seed)
    folder = root / "org" / "openml" / "www" / "datasets" / str(dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "description.xml").write_text(
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">\n'
        f"  <oml:id>{dataset_id}</oml:id>\n  <oml:name>{name}-standin</oml:name>\n  <oml:format>ARFF</oml:format>\n"
        "  <oml:default_target_attribute>class</oml:default_target_attribute>\n</oml:data_set_description>\n")
    classes = [str(c + 1) for c in range(n_classes)]
    header = [f"@RELATION {name}-standin", ""] + [f"@ATTRIBUTE A{i} NUMERIC" for i in range(n_features)]
    header += ["@ATTRIBUTE class {" + ",".join(classes) + "}", "", "@DATA"]
    body = [",".join(f"{v:.4f}" for v in row) + "," + classes[label] for row, label in zip(x, labels, strict=True)]
    (folder / "dataset.arff").write_text("\n".join(header + body) + "\n")
    return folder


def write_cifar10(root: Path, n_rows: int, seed: int) -> Path:
    """Write a stand-in for CIFAR10's test split in torchvision's layout under ``root``; returns its folder."""
    _, n_features, n_classes = SHAPES["cifar10"]
    x, labels = class_mixture(n_rows, n_features, n_classes, seed)
    pixels = np.clip(np.rint(128 + 40 * x), 0, 255).astype(np.uint8)  # (N, 3072) as C, H, W
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "test_batch").open("wb") as fh:
        pickle.dump({"batch_label": b"stand-in", "data": pixels, "labels": labels.tolist()}, fh)
    with (folder / "batches.meta").open("wb") as fh:
        pickle.dump({"label_names": list(CIFAR10_CLASSES), "num_vis": n_features, "num_cases_per_batch": n_rows}, fh)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bandit_experiments.standin",
        description="Write generated stand-ins (NOT the real data) for dataset envs into a cache directory; run a "
        "config on them with --env-kwargs '{cache_dir: DIR, verify_checksums: false}'.")
    parser.add_argument("names", nargs="+", choices=sorted(SHAPES), metavar="NAME", help=", ".join(sorted(SHAPES)))
    parser.add_argument("--out", required=True, type=Path, help="the cache directory to write (cache_dir=DIR)")
    parser.add_argument("--rows", type=int, default=10_000, help="rows per dataset (default 10,000: the paper's "
                        "horizon; a run's horizon may not exceed it)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated values (default 0)")
    args = parser.parse_args(argv)
    if args.rows < 1:
        parser.error(f"argument --rows: must be an integer >= 1, got {args.rows}")
    for name in args.names:
        folder = (write_cifar10(args.out, args.rows, args.seed) if SHAPES[name][0] is None
                  else write_openml(args.out, name, args.rows, args.seed))
        print(f"{name}: {args.rows} generated rows ({SHAPES[name][1]} features, {SHAPES[name][2]} classes; "
              f"a stand-in, not the data) in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
