"""A sum-tree: leaf values with O(log n) updates and sampling proportional to value.

The tree is a flat array: node ``i`` has children ``2i`` and ``2i+1``, the root is node 1 and
leaf ``k`` lives at ``size + k`` (``size`` = capacity rounded up to a power of two; padding
leaves stay 0). Parents are recomputed as the sum of their two children rather than adjusted by
deltas, so rounding errors never accumulate over many updates.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Non-negative values on ``capacity`` leaves; find the leaf that covers a prefix sum."""

    def __init__(self, capacity: int) -> None:
        """Create a tree of ``capacity`` leaves, all 0.

        Raises:
            ValueError: if ``capacity`` < 1.
        """
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._size = 1 << max(0, (self.capacity - 1).bit_length())
        self._depth = self._size.bit_length() - 1
        self._tree = np.zeros(2 * self._size, dtype=np.float64)

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._tree[1])

    @property
    def leaves(self) -> np.ndarray:
        """A copy of the ``capacity`` leaf values."""
        return self._tree[self._size : self._size + self.capacity].copy()

    def get(self, indices: np.ndarray | int) -> np.ndarray:
        """Leaf values at ``indices``."""
        idx = self._check_indices(indices)
        return self._tree[self._size + idx]

    def update(self, indices: np.ndarray | int, values: np.ndarray | float) -> None:
        """Set leaves ``indices`` to ``values`` (the last one wins for repeated indices).

        Raises:
            ValueError: on an index out of range or a negative or non-finite value.
        """
        idx = self._check_indices(indices)
        vals = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        if not np.all(np.isfinite(vals)) or np.any(vals < 0):
            raise ValueError(f"SumTree values must be finite and >= 0, got {vals}")
        self._tree[self._size + idx] = vals
        nodes = np.unique((self._size + idx) // 2)
        while nodes.size and nodes[0] >= 1:
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
            nodes = np.unique(nodes // 2)
            nodes = nodes[nodes >= 1]

    def find(self, prefix_sums: np.ndarray) -> np.ndarray:
        """Leaf ``k`` with ``sum(leaves[:k]) <= u < sum(leaves[:k+1])`` for each ``u``.

        ``u`` is clipped to ``[0, total)``; a leaf of value 0 is never returned.

        Raises:
            ValueError: if every leaf is 0.
        """
        total = self.total
        if total <= 0:
            raise ValueError("SumTree is empty: every value is 0")
        u = np.clip(np.asarray(prefix_sums, dtype=np.float64), 0.0, np.nextafter(total, 0.0))
        node = np.ones(u.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = 2 * node
            left_sum = self._tree[left]
            right = u >= left_sum
            u = np.where(right, u - left_sum, u)
            node = np.where(right, left + 1, left)
        leaf = node - self._size
        # Rounding can overshoot into an empty leaf at the right edge of a subtree; step back to
        # the nearest non-empty leaf on the left, which is where the prefix sum really ends.
        values = self._tree[self._size : self._size + self._size]
        bad = values[leaf] <= 0
        if np.any(bad):
            nonzero = np.flatnonzero(values > 0)
            pos = np.searchsorted(nonzero, leaf[bad], side="right") - 1
            leaf[bad] = nonzero[np.maximum(pos, 0)]
        return leaf

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` leaves independently with probability ``value / total``."""
        return self.find(rng.random(n) * self.total)

    def _check_indices(self, indices: np.ndarray | int) -> np.ndarray:
        idx = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            raise ValueError(f"SumTree index out of range [0, {self.capacity}): {idx}")
        return idx
