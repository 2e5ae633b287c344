"""Tabulated densities in u = ln σ: the representation of adaptive samplers.

A tabulated density lives on nodes x_0 < … < x_J and is linear inside each segment, from ``left[j]`` at
x_j to ``right[j]`` at x_{j+1}. Equal ends give a histogram (piecewise constant, Kingma & Gao's adaptive
schedule); ``left[j+1] = right[j]`` gives a continuous piecewise-linear density (InfoNoise's profile).
Segment masses are exact trapezoids, so the CDF is piecewise quadratic and the inverse CDF inside a
segment solves a·t² + b·t = m for the fraction t of the segment width h:
  a = (right − left)·h/2, b = left·h, t = 2m/(b + √(b² + 4am))   (the cancellation-free root).

Normalising is done once, when a density is built. A checkpoint keeps the normalised tables (``tables()``)
and ``from_tables`` restores them bit for bit, and ``to`` moves them between devices as they are: the total
of already-normalised tables is 1 only to rounding (0.9999999999999998 happens), so normalising them again
would change their last bits, and with them every later draw and rebuild of a resumed run.

Evaluating at many points costs one ``searchsorted`` and one gather per call: the per-segment quantities
the formulas need (node, width, a, b, b², 4a, right − left) are computed once per density, elementwise
from the tables, and stored padded so that the raw ``searchsorted`` position i indexes segment
clamp(i − 1, 0, J − 1) directly. Each value is the same IEEE operation on the same operands as the formula
written per point, so the results are bit for bit those of the per-point formulas.
"""

from __future__ import annotations

import torch
from torch import Tensor


class TabulatedDensity:
    """A normalised density that is linear on each segment of a node grid."""

    def __init__(self, nodes: Tensor, left: Tensor, right: Tensor) -> None:
        constant = left is right  # a histogram passes one table for both ends: known without reading it
        nodes = nodes.to(torch.float64)
        left = left.to(torch.float64).clamp(min=0)
        right = right.to(torch.float64).clamp(min=0)
        if nodes.ndim != 1 or left.shape != (nodes.numel() - 1,) or right.shape != left.shape:
            raise ValueError("need J+1 nodes and J left/right segment values")
        width = nodes.diff()
        if bool((width <= 0).any()):
            raise ValueError("nodes must be strictly increasing")
        mass = 0.5 * (left + right) * width
        total = mass.sum()
        if not bool(total > 0) or not bool(torch.isfinite(total)):
            raise ValueError("a tabulated density needs positive, finite total mass")
        self.nodes = nodes
        self.width = width
        self.left = left / total
        self.right = right / total
        self.cum = torch.cat(
            [torch.zeros(1, dtype=torch.float64, device=nodes.device), (mass / total).cumsum(0)]
        )
        self.cum[-1] = 1.0
        self._derive(constant)

    @classmethod
    def histogram(cls, edges: Tensor, values: Tensor) -> TabulatedDensity:
        """Piecewise-constant density with ``values[j]`` on [edges[j], edges[j+1]]."""
        return cls(edges, values, values)

    @classmethod
    def linear(cls, nodes: Tensor, values: Tensor) -> TabulatedDensity:
        """Continuous piecewise-linear density through (nodes[j], values[j])."""
        return cls(nodes, values[:-1], values[1:])

    def tables(self) -> dict[str, Tensor]:
        """The normalised tables: nodes, segment end values and the cumulative mass at each node."""
        return {"nodes": self.nodes, "left": self.left, "right": self.right, "cum": self.cum}

    @classmethod
    def from_tables(cls, nodes: Tensor, left: Tensor, right: Tensor, cum: Tensor) -> TabulatedDensity:
        """The density whose ``tables()`` these are, bit for bit (nothing is normalised again)."""
        segments = (nodes.numel() - 1,)
        if nodes.ndim != 1 or cum.shape != nodes.shape or not left.shape == right.shape == segments:
            shapes = [tuple(t.shape) for t in (nodes, left, right, cum)]
            raise ValueError(
                f"density tables need J+1 nodes and cum, J left and right values; got nodes, left, right, "
                f"cum of shapes {shapes}"
            )
        density = cls.__new__(cls)
        density.nodes = nodes.to(torch.float64)
        density.width = density.nodes.diff()
        density.left = left.to(torch.float64)
        density.right = right.to(torch.float64)
        density.cum = cum.to(torch.float64)
        density._derive(bool(torch.equal(density.left, density.right)))
        return density

    def _derive(self, constant: bool) -> None:
        """The padded per-segment tables of ``prob`` and ``icdf`` (see the module docstring); ``constant``:
        left equals right on every segment (a histogram), so the density on segment j is left[j]."""
        segments = self.width.numel()
        # raw searchsorted position i in 0..J+1 -> segment clamp(i - 1, 0, J - 1)
        pad = (torch.arange(segments + 2, device=self.nodes.device) - 1).clamp(0, segments - 1)
        left, right, width = self.left, self.right, self.width
        a = 0.5 * (right - left) * width
        b = left * width
        # rows: node, width, left, right - left (prob); cum, b, b², 4a (icdf); gathered together per call
        self._segments = torch.stack(
            [self.nodes[:-1], width, left, right - left, self.cum[:-1], b, b * b, 4 * a]
        )[:, pad].contiguous()
        self.constant = constant

    def to(self, device: torch.device | str) -> TabulatedDensity:
        """The same density with its tables on ``device``, unchanged."""
        return TabulatedDensity.from_tables(**{k: v.to(device) for k, v in self.tables().items()})

    def _segment(self, u: Tensor) -> tuple[Tensor, Tensor]:
        j = (torch.searchsorted(self.nodes, u, right=True) - 1).clamp(0, self.width.numel() - 1)
        t = ((u - self.nodes[j]) / self.width[j]).clamp(0, 1)
        return j, t

    def prob(self, u: Tensor) -> Tensor:
        """Density at u (zero outside the node range)."""
        u = u.to(torch.float64)
        inside = (u >= self.nodes[0]) & (u <= self.nodes[-1])
        return torch.where(inside, self.segment_value(u), 0.0)

    def segment_value(self, u: Tensor) -> Tensor:
        """The density's formula at float64 u, continued flat beyond the node range by its end values (so
        equal to ``prob`` inside the range; NaN u gives some segment's value): for callers whose factor is
        zero outside the range anyway."""
        i = torch.searchsorted(self.nodes, u, right=True)
        if self.constant:
            return self._segments[2][i]
        node, width, left, slope = self._segments[:4].index_select(1, i)
        return left + slope * ((u - node) / width).clamp(0, 1)

    def cdf(self, u: Tensor) -> Tensor:
        """∫ density up to u."""
        u = u.to(torch.float64).clamp(self.nodes[0], self.nodes[-1])
        j, t = self._segment(u)
        h = self.width[j]
        partial = self.left[j] * t * h + 0.5 * (self.right[j] - self.left[j]) * t**2 * h
        return (self.cum[j] + partial).clamp(0, 1)

    def icdf(self, p: Tensor) -> Tensor:
        """The u whose CDF is p, for p in [0, 1]: in the segment where a·t² + b·t = m, m = p − cum[j]."""
        p = p.to(torch.float64)
        i = torch.searchsorted(self.cum, p, right=True)
        node, h, _, _, cum, b, b2, a4 = self._segments.index_select(1, i)
        m = (p - cum).clamp(min=0)
        disc = (b2 + a4 * m).clamp(min=0)
        denom = b + disc.sqrt()
        t = torch.where(denom > 0, 2 * m / denom.clamp(min=1e-300), 0.0)
        return node + t.clamp(0, 1) * h
