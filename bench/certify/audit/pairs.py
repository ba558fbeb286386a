"""Input pairs for the privacy audit: the inputs a claim says are indistinguishable.

Radius claims (IP, reconstruction privacy: inputs within distance r) get pairs at the
radius, in random directions and in worst-case directions that maximise the encoder's
output difference by projected gradient ascent. Whole-domain claims (LDP: any two inputs)
get the extreme corners of the data range, random pairs of real inputs, and pairs pushed
apart by sign-gradient ascent inside the data range. Every pair stays in the data range
and within the claimed distance: clipping x1 to the box (which holds x0) only shrinks each
coordinate of x1 - x0, so it never leaves an l1, l2 or linf ball around x0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

Norm = Literal["l1", "l2", "linf"]
_ORDER = {"l1": 1.0, "l2": 2.0, "linf": float("inf")}
PGD_STEPS = 10
RADIUS_ASCENT_STEPS = 40  # worst case within a radius: the certified constant is the target
MAX_VERTEX_SEARCH = 4096  # inputs up to this size try every l1 vertex before the ascent


@dataclass(frozen=True)
class InputPair:
    """Two inputs (each of the task's input shape) and how they were chosen."""

    x0: torch.Tensor
    x1: torch.Tensor
    kind: str  # "random", "worst-case" or "extremes"
    distance: float  # ||x1 - x0|| in the claim's norm (the l2 norm for whole-domain pairs)

    def describe(self) -> str:
        return f"{self.kind} pair at distance {self.distance:.4g}"


def parse_norm(distance: str | None) -> Norm | None:
    """The norm of a claim's distance ("l2/input" -> "l2"); None when it is not an input-space
    l1 / l2 / linf distance the audit can construct pairs for."""
    if not distance:
        return None
    norm, _, space = distance.partition("/")
    norm = norm.strip().lower()
    if norm not in _ORDER or space.strip().lower() not in ("", "input"):
        return None
    return norm  # type: ignore[return-value]


def _norms(d: torch.Tensor, norm: Norm) -> torch.Tensor:
    """Per-row norms of a batch of differences."""
    return torch.linalg.vector_norm(d.flatten(1), ord=_ORDER[norm], dim=1)


def _onto_ball(d: torch.Tensor, radius: float, norm: Norm, *, exact: bool) -> torch.Tensor:
    """Differences scaled onto the sphere of `radius` (`exact`) or pulled into the ball
    (clipped for linf, scaled radially otherwise)."""
    if norm == "linf":
        return d.sign() * radius if exact else d.clamp(-radius, radius)
    n = _norms(d, norm).clamp_min(1e-12).view(-1, *([1] * (d.dim() - 1)))
    return d * (radius / n) if exact else d * (radius / n).clamp(max=1.0)


def _inward(x0: torch.Tensor, d: torch.Tensor, box: tuple[float, float]) -> torch.Tensor:
    """`d` with the components that would leave the box at a boundary coordinate flipped
    (so a move from a black pixel is upward), keeping the full radius usable."""
    lo, hi = box
    outward = ((x0 <= lo) & (d < 0)) | ((x0 >= hi) & (d > 0))
    return torch.where(outward, -d, d)


def _random_directions(
    x0: torch.Tensor, radius: float, norm: Norm, box: tuple[float, float], gen: torch.Generator
) -> torch.Tensor:
    """x0 + a random direction at `radius`, pointed into the box and clipped to it."""
    d = torch.randn(x0.shape, generator=gen, dtype=x0.dtype)
    if norm == "l1":  # uniform direction on the l1 sphere: normalised Laplace signs
        d = d.sign() * torch.empty_like(d).exponential_(generator=gen)
    d = _onto_ball(_inward(x0, d, box), radius, norm, exact=True)
    return _fill_radius(x0, d, radius, norm, box)


def _fill_radius(
    x0: torch.Tensor, d: torch.Tensor, radius: float, norm: Norm, box: tuple[float, float]
) -> torch.Tensor:
    """x0 + s d clipped to the box, with s >= 1 found by bisection so that the clipped move
    is at exactly `radius` (what the box cuts off one coordinate goes to the others): a
    pair at the full distance is the one a tight claim is tight on. Where the box cannot
    hold the radius in this direction, the farthest clipped point."""
    shape = (-1, *([1] * (x0.dim() - 1)))

    def reach(scale: torch.Tensor) -> torch.Tensor:
        return _norms((x0 + scale.view(shape) * d).clamp(*box) - x0, norm)

    lo = torch.ones(len(x0), dtype=x0.dtype)
    hi = torch.full_like(lo, 1.0)
    for _ in range(60):  # grow hi until it reaches the radius (or stops gaining)
        short = reach(hi) < radius
        if not short.any():
            break
        hi = torch.where(short, hi * 2, hi)
    for _ in range(50):
        mid = (lo + hi) / 2
        under = reach(mid) < radius
        lo, hi = torch.where(under, mid, lo), torch.where(under, hi, mid)
    return (x0 + lo.view(shape) * d).clamp(*box)


def _output_distance(
    encoder: nn.Module, a: torch.Tensor, b: torch.Tensor, p: float
) -> torch.Tensor:
    """Per-row ||Enc(a) - Enc(b)||_p."""
    return torch.linalg.vector_norm((encoder(a) - encoder(b)).flatten(1), ord=p, dim=1)


def _ascent_step(g: torch.Tensor, norm: Norm, step: float) -> torch.Tensor:
    """A steepest-ascent step of size `step` for gradient `g` in the l2 or linf norm."""
    if norm == "linf":
        return step * g.sign()
    n = torch.linalg.vector_norm(g.flatten(1), dim=1).clamp_min(1e-12)
    return step * g / n.view(-1, *([1] * (g.dim() - 1)))


def _l1_vertex(
    x0: torch.Tensor, grad: torch.Tensor, radius: float, box: tuple[float, float]
) -> torch.Tensor:
    """The point of the l1 ball around x0, inside the box, that maximises <grad, x1 - x0>:
    a fractional knapsack, so the greedy fill of coordinates by |grad| is exact (one
    coordinate, the ball's vertex, unless the box cuts it short)."""
    lo, hi = box
    g, base = grad.flatten(1), x0.flatten(1)
    room = torch.where(g >= 0, hi - base, base - lo).clamp_min(0)
    order = g.abs().argsort(dim=1, descending=True, stable=True)
    cap = room.gather(1, order)
    before = cap.cumsum(1) - cap
    amount = torch.zeros_like(g).scatter(1, order, (radius - before).clamp(min=0).minimum(cap))
    return (base + amount * torch.where(g >= 0, 1.0, -1.0)).view_as(x0)


def _best_vertices(
    x0: torch.Tensor, radius: float, box: tuple[float, float], encoder: nn.Module, p: float
) -> torch.Tensor:
    """For each row of x0, the vertex x0 +- radius e_j (clipped to the box) with the largest
    ||Enc(x1) - Enc(x0)||_p, by trying all 2d of them: exact for a linear encoder, whose
    gap over the l1 ball peaks at a vertex, and a start for the ascent otherwise."""
    d = x0[0].numel()
    moves = torch.cat([torch.eye(d), -torch.eye(d)]) * radius
    out = []
    with torch.no_grad():
        for row in x0:
            candidates = (row.flatten() + moves).clamp(*box).view(-1, *row.shape)
            gaps = _output_distance(encoder, candidates, row.expand_as(candidates), p)
            out.append(candidates[int(gaps.argmax())])
    return torch.stack(out)


def worst_case_radius_pairs(
    x0: torch.Tensor,
    radius: float,
    norm: Norm,
    box: tuple[float, float],
    encoder: nn.Module,
    output_p: float,
    gen: torch.Generator,
) -> torch.Tensor:
    """x1 within `radius` of each row of `x0` maximising ||Enc(x1) - Enc(x0)||_p, from a
    random direction, keeping the best point seen. l2 / linf: gradient steps of radius / 2
    projected back onto the sphere (RADIUS_ASCENT_STEPS of them).
    l1: a convex gap peaks at a vertex of the ball, so the search starts at the best of all
    vertices (`_best_vertices`, inputs up to MAX_VERTEX_SEARCH values) and each step jumps
    to the vertex that maximises the linearised gap (`_l1_vertex`), kept only if the gap
    grew."""
    with torch.no_grad():
        target = encoder(x0)

    def gap_and_grad(x1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x1 = x1.detach().requires_grad_(True)
        with torch.enable_grad():
            gap = torch.linalg.vector_norm((encoder(x1) - target).flatten(1), ord=output_p, dim=1)
            (grad,) = torch.autograd.grad(gap.sum(), x1)
        return gap.detach(), grad

    x1 = _random_directions(x0, radius, norm, box, gen)
    if norm == "l1" and x0[0].numel() <= MAX_VERTEX_SEARCH:
        x1 = _best_vertices(x0, radius, box, encoder, output_p)
    best, best_gap = x1.detach(), torch.full((len(x0),), -1.0)
    for _ in range(RADIUS_ASCENT_STEPS):
        gap, grad = gap_and_grad(x1)
        better = (gap > best_gap).view(-1, *([1] * (x0.dim() - 1)))
        best, best_gap = torch.where(better, x1.detach(), best), torch.maximum(gap, best_gap)
        if norm == "l1":
            candidate = _l1_vertex(x0, grad, radius, box)
            with torch.no_grad():
                new_gap = _output_distance(encoder, candidate, x0, output_p)
            # Ties go to the vertex: under an isometry (identity encoder) every point of the
            # sphere has the same gap, and a vertex concentrates it (worst for Laplace noise).
            keep = (new_gap >= gap * (1 - 1e-6)).view(-1, *([1] * (x0.dim() - 1)))
            x1 = torch.where(keep, candidate, x1.detach())
        else:
            # Steps of half the radius then back onto the sphere: for a linear encoder this
            # is a damped power iteration towards its top singular direction.
            step = x1.detach() + _ascent_step(grad, norm, radius / 2) - x0
            x1 = _fill_radius(x0, _onto_ball(step, radius, norm, exact=True), radius, norm, box)
    gap, _ = gap_and_grad(x1)
    better = (gap >= best_gap).view(-1, *([1] * (x0.dim() - 1)))
    return torch.where(better, x1.detach(), best)


def worst_case_domain_pairs(
    x0: torch.Tensor,
    x1: torch.Tensor,
    box: tuple[float, float],
    encoder: nn.Module,
    output_p: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both inputs moved apart inside the box by sign-gradient ascent on
    ||Enc(x1) - Enc(x0)||_p (PGD_STEPS steps of a quarter of the range)."""
    lo, hi = box
    step = (hi - lo) / 4
    for _ in range(PGD_STEPS):
        a = x0.detach().requires_grad_(True)
        b = x1.detach().requires_grad_(True)
        with torch.enable_grad():
            gap = _output_distance(encoder, b, a, output_p)
            ga, gb = torch.autograd.grad(gap.sum(), (a, b))
        # Where the gap is flat (e.g. equal pixels under the l1 norm), push x0 down, x1 up.
        x0 = (a.detach() + step * torch.where(ga == 0, -1.0, ga.sign())).clamp(lo, hi)
        x1 = (b.detach() + step * torch.where(gb == 0, 1.0, gb.sign())).clamp(lo, hi)
    return x0.detach(), x1.detach()


def radius_pairs(
    anchors: torch.Tensor,
    radius: float,
    norm: Norm,
    box: tuple[float, float],
    encoder: nn.Module | None,
    output_p: float,
    n_random: int,
    n_worst: int,
    gen: torch.Generator,
) -> list[InputPair]:
    """Pairs (anchor, anchor + move) with ||move|| <= radius: `n_random` random directions
    and `n_worst` worst-case ones (random instead when there is no differentiable encoder).
    Uses the first n_random + n_worst anchors."""
    x0 = anchors[: n_random + n_worst]
    moved = _random_directions(x0, radius, norm, box, gen)
    kinds = ["random"] * len(x0)
    if encoder is not None and n_worst > 0:
        try:
            worst = worst_case_radius_pairs(
                x0[n_random:], radius, norm, box, encoder, output_p, gen
            )
        except RuntimeError:  # not differentiable: keep the random directions
            worst = None
        if worst is not None:
            moved = torch.cat([moved[:n_random], worst])
            kinds[n_random:] = ["worst-case"] * len(worst)
    distances = _norms(moved - x0, norm)
    return [
        InputPair(a, b, kind, float(dist))
        for a, b, kind, dist in zip(x0, moved, kinds, distances, strict=True)
    ]


def domain_pairs(
    anchors: torch.Tensor,
    box: tuple[float, float],
    encoder: nn.Module | None,
    output_p: float,
    n_random: int,
    n_worst: int,
) -> list[InputPair]:
    """Pairs of inputs anywhere in the box: the two extreme corners (all lo vs all hi),
    `n_random` pairs of real inputs, and `n_worst` real pairs pushed apart by gradient
    ascent on the encoder (when there is one). Uses 2 (n_random + n_worst) anchors."""
    lo, hi = box
    shape = anchors.shape[1:]
    pairs = [
        InputPair(torch.full(shape, lo), torch.full(shape, hi), "extremes", _l2(hi - lo, shape))
    ]
    k = n_random + n_worst
    a, b = anchors[:k], anchors[k : 2 * k]
    kinds = ["random"] * k
    if encoder is not None and n_worst > 0:
        try:
            wa, wb = worst_case_domain_pairs(a[n_random:], b[n_random:], box, encoder, output_p)
            a, b = torch.cat([a[:n_random], wa]), torch.cat([b[:n_random], wb])
            kinds[n_random:] = ["worst-case"] * n_worst
        except RuntimeError:
            pass
    distances = _norms(b - a, "l2")
    pairs += [
        InputPair(u, v, kind, float(dist))
        for u, v, kind, dist in zip(a, b, kinds, distances, strict=True)
    ]
    return pairs


def _l2(side: float, shape: torch.Size) -> float:
    return float(side) * float(torch.tensor(shape).prod()) ** 0.5
