"""Which LMC-TS settings a kind of model takes: :func:`with_defaults` fills the unset arguments from an agent's
defaults table (one per kind of model: ``"linear"``, ``"glm"``, ``"neural"``; :attr:`agents.lmcts.LMCTS.defaults`),
and :func:`check_for_model` raises one ValueError for a setting the model cannot take.
"""

from __future__ import annotations

from typing import Any

#: The arguments whose ``"auto"`` is the defaults table's value (they take None: none); the others' is None.
AUTO = ("batch_size", "step_bound")


def with_defaults(table: dict[str, Any], **given: Any) -> dict[str, Any]:
    """Each argument as given, or the defaults table's value where it is unset: None, or ``"auto"`` for :data:`AUTO`."""
    def unset(name: str, value: Any) -> bool:
        return isinstance(value, str) and value == "auto" if name in AUTO else value is None
    return {name: table.get(name) if unset(name, value) else value for name, value in given.items()}


def check_for_model(model: Any, neural: bool, model_class: type, schedule: str, preconditioner: str,
                    step_bound: float | None, batch_size: int | None, adaptive: bool) -> None:
    """One ValueError for a setting the model cannot take."""
    wrong = [(schedule == "inverse_lambda_max" and neural, "step_schedule must be 'inverse_t' or 'constant'",
              "'inverse_lambda_max' (the largest eigenvalue of the linear and glm models' Gram matrix)"),
             (preconditioner == "diagonal" and not neural, "preconditioner must be 'none'",
              "'diagonal'; the diagonal preconditioner needs a neural model ('mlp', an MLP or an nn.Module)"),
             (step_bound is not None and not neural, "step_bound must be None",
              f"{step_bound!r}; the bound is on the Gauss-Newton matrix of a neural model's squared loss"),
             (batch_size is not None and not model_class.supports_minibatch, "batch_size must be None (full batch)",
              f"{batch_size!r}; mini-batches need a model with a data history, e.g. model='glm'"),
             (adaptive and not neural, "inverse_temperature must be a number",
              "'auto'; the temperature from the data is for neural models (the squared loss's noise; the linear "
              "model's Gram matrix holds its ridge, and the logistic loss has no noise scale)")]
    for bad, rule, got in wrong:
        if bad:
            raise ValueError(f"{rule} for model={model!r}, got {got}")
