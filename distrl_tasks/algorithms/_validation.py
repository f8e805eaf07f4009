"""Argument checks shared by the RL math in :mod:`distrl_tasks.algorithms.functional`.

Every check raises ``ValueError`` whose message names the offending argument, so a shape bug in a
learner surfaces as "values must have shape [B, T] = (4, 3), got (4, 2)" rather than a broadcast
error deep inside a recursion.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _is_number(value: object) -> bool:
    """True for int and float scalars, False for bool (a common typo for a flag)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_tensor(name: str, x: object) -> Tensor:
    """Check that ``x`` is a tensor.

    Args:
        name: Argument name used in the error message.
        x: The value to check.

    Returns:
        ``x`` itself.

    Raises:
        ValueError: If ``x`` is not a ``torch.Tensor``.
    """
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_float_bt(name: str, x: object, like: Tensor | None = None) -> Tensor:
    """Check a floating-point ``[B, T]`` tensor, optionally against a reference tensor.

    Args:
        name: Argument name used in error messages.
        x: The tensor to check.
        like: When given, ``x`` must match its shape, dtype and device.

    Returns:
        ``x`` itself.

    Raises:
        ValueError: If ``x`` is not 2-D floating point or disagrees with ``like``.
    """
    x = check_tensor(name, x)
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape [B, T], got {list(x.shape)}")
    if x.shape[1] == 0:
        raise ValueError(f"{name} must have at least one time step, got shape {list(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if like is not None:
        check_same(name, x, like, shape=tuple(like.shape))
    return x


def check_same(name: str, x: Tensor, like: Tensor, shape: tuple[int, ...]) -> None:
    """Check that ``x`` has the given shape and ``like``'s dtype and device.

    Args:
        name: Argument name used in error messages.
        x: The tensor to check.
        like: Reference tensor for dtype and device.
        shape: The required shape.

    Raises:
        ValueError: On any mismatch.
    """
    if tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(x.shape)}")
    if x.dtype != like.dtype:
        raise ValueError(
            f"{name} must have dtype {like.dtype} (as the other inputs), got {x.dtype}"
        )
    if x.device != like.device:
        raise ValueError(f"{name} must be on device {like.device}, got {x.device}")


def check_batch(name: str, x: object, like: Tensor) -> Tensor:
    """Check a floating-point per-trajectory ``[B]`` tensor against a ``[B, T]`` reference.

    Args:
        name: Argument name used in error messages.
        x: The tensor to check.
        like: A ``[B, T]`` tensor whose batch size, dtype and device ``x`` must match.

    Returns:
        ``x`` itself.

    Raises:
        ValueError: On a wrong type, shape, dtype or device.
    """
    x = check_tensor(name, x)
    check_same(name, x, like, shape=(like.shape[0],))
    return x


def as_float_like(name: str, x: object, like: Tensor) -> Tensor:
    """Convert a bool/int/float ``[B, T]`` tensor (e.g. ``dones``) to ``like``'s dtype.

    Args:
        name: Argument name used in error messages.
        x: The tensor to convert.
        like: Reference ``[B, T]`` tensor for shape, dtype and device.

    Returns:
        ``x`` as a tensor of ``like.dtype``.

    Raises:
        ValueError: On a wrong type, shape or device.
    """
    x = check_tensor(name, x)
    if tuple(x.shape) != tuple(like.shape):
        raise ValueError(f"{name} must have shape {list(like.shape)}, got {list(x.shape)}")
    if x.device != like.device:
        raise ValueError(f"{name} must be on device {like.device}, got {x.device}")
    return x.to(like.dtype)


def check_mask(mask: object, like: Tensor) -> Tensor:
    """Validate a right-padded validity mask and return it as a bool tensor.

    A valid mask row is some ones followed only by zeros (``[1, 1, 0, 0]``); a row of all zeros
    is an empty trajectory. Holes (``[1, 0, 1]``) are rejected because the recursions would
    otherwise silently join two trajectories.

    Args:
        mask: ``[B, T]`` tensor of bool, or of 0/1 numbers.
        like: Reference ``[B, T]`` tensor for shape and device.

    Returns:
        The mask as a ``[B, T]`` bool tensor.

    Raises:
        ValueError: On a wrong shape or device, values other than 0/1, or a non right-padded row.
    """
    mask = check_tensor("mask", mask)
    if tuple(mask.shape) != tuple(like.shape):
        raise ValueError(f"mask must have shape {list(like.shape)}, got {list(mask.shape)}")
    if mask.device != like.device:
        raise ValueError(f"mask must be on device {like.device}, got {mask.device}")
    if mask.dtype != torch.bool:
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("mask must contain only 0 and 1")
        mask = mask != 0
    if mask.shape[1] > 1 and bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise ValueError(
            "mask must be right-padded: each row is valid steps followed only by padding"
        )
    return mask


def check_unit_interval(name: str, value: float) -> float:
    """Check that a scalar hyperparameter lies in ``[0, 1]``.

    Args:
        name: Argument name used in the error message.
        value: The value to check.

    Returns:
        ``value`` as a float.

    Raises:
        ValueError: If ``value`` is not a real number in ``[0, 1]``.
    """
    if not _is_number(value) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    """Check that a clipping threshold is positive (``math.inf`` means no clipping).

    Args:
        name: Argument name used in the error message.
        value: The value to check.

    Returns:
        ``value`` as a float.

    Raises:
        ValueError: If ``value`` is not a positive number (NaN included).
    """
    if not _is_number(value) or math.isnan(value) or not float(value) > 0.0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def masked_mean(x: Tensor, mask: Tensor | None) -> Tensor:
    """Mean over the time axis of a ``[B, T]`` tensor, counting only valid steps.

    Padded entries are dropped with ``where`` (not multiplied by zero), so garbage such as NaN in
    padding cannot leak into the result. A row with no valid step has mean 0.

    Args:
        x: ``[B, T]`` values.
        mask: ``[B, T]`` bool validity mask, or None when every step is valid.

    Returns:
        ``[B]`` per-row means.
    """
    if mask is None:
        return x.mean(dim=1)
    total = torch.where(mask, x, torch.zeros_like(x)).sum(dim=1)
    count = mask.sum(dim=1).clamp(min=1).to(x.dtype)
    return total / count


def check_float_b(name: str, x: object, like: Tensor | None = None) -> Tensor:
    """Check a floating-point per-trajectory ``[B]`` tensor, optionally against a reference.

    Args:
        name: Argument name used in error messages.
        x: The tensor to check.
        like: When given, a ``[B]`` tensor whose shape, dtype and device ``x`` must match.

    Returns:
        ``x`` itself.

    Raises:
        ValueError: If ``x`` is not 1-D floating point or disagrees with ``like``.
    """
    x = check_tensor(name, x)
    if x.dim() != 1:
        raise ValueError(f"{name} must have shape [B], got {list(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if like is not None:
        check_same(name, x, like, shape=tuple(like.shape))
    return x


def check_non_negative(name: str, value: float) -> float:
    """Check that a weight is a finite number >= 0.

    Args:
        name: Argument name used in the error message.
        value: The value to check.

    Returns:
        ``value`` as a float.

    Raises:
        ValueError: If ``value`` is negative, infinite, NaN or not a number.
    """
    if not _is_number(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)
