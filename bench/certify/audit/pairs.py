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
RADIUS_ASCENT_STEPS = 100  # worst case within a radius: the certified constant is the target
POWER_STEPS = 20  # power iteration for an encoder's most stretched direction
FD_STEP = 1e-3  # relative step of the central differences it takes J v by
MAX_VERTEX_SEARCH = 4096  # inputs up to this size try every l1 vertex before the ascent
WORST_ANCHORS = 16  # candidate anchors the worst-case search climbs from, the best kept


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


def _unit_rows(d: torch.Tensor) -> torch.Tensor:
    """Each row of `d` scaled to l2 norm 1 (a zero row stays zero)."""
    n = torch.linalg.vector_norm(d.flatten(1), dim=1).clamp_min(1e-30)
    return d / n.view(-1, *([1] * (d.dim() - 1)))


def _jacobian_vector(encoder: nn.Module, x0: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """J v per row, by the central difference (Enc(x0 + h v) - Enc(x0 - h v)) / 2h: exact for
    a linear encoder and O(h^2) otherwise, with no second derivative needed, so any
    encoder that can be backpropagated through will do (the power iteration only needs
    the direction)."""
    h = FD_STEP * max(1.0, float(x0.abs().max()))
    with torch.no_grad():
        return (encoder(x0 + h * v) - encoder(x0 - h * v)) / (2 * h)


def top_directions(
    encoder: nn.Module, x0: torch.Tensor, gen: torch.Generator, steps: int = POWER_STEPS
) -> torch.Tensor:
    """Per row of x0, the input direction the encoder stretches most: the top right singular
    vector of its Jacobian J at x0, by power iteration on J^T J (`steps` Jacobian-vector
    products, `_jacobian_vector`, and vector-Jacobian products by backpropagation). For a
    linear encoder this is exactly the worst l2 direction (the spectral norm is attained
    along it); for a network it is the direction of largest local sensitivity, the start
    that a gradient ascent on the finite-radius gap then refines. Raises RuntimeError for
    an encoder autograd cannot differentiate."""
    v = _unit_rows(torch.randn(x0.shape, generator=gen, dtype=x0.dtype))
    x0 = x0.detach()
    for _ in range(steps):
        jv = _jacobian_vector(encoder, x0, v)
        x = x0.clone().requires_grad_(True)
        with torch.enable_grad():
            out = encoder(x)
            (jtjv,) = torch.autograd.grad(out, x, grad_outputs=jv.reshape(out.shape))
        if not torch.isfinite(jtjv).all():
            raise RuntimeError("non-finite Jacobian product")
        v = _unit_rows(jtjv)
    return v


def _step_size(radius: float, step: int) -> float:
    """Ascent step `step` of RADIUS_ASCENT_STEPS: half the radius, shrinking linearly to a
    twentieth over the second half so the ascent settles on a maximum instead of circling it."""
    half = RADIUS_ASCENT_STEPS // 2
    if step < half:
        return radius / 2
    return radius / 2 * max(0.1, 1.0 - (step - half) / max(1, RADIUS_ASCENT_STEPS - half))


def _ascend_sphere(
    x0: torch.Tensor,
    x1: torch.Tensor,
    radius: float,
    norm: Norm,
    box: tuple[float, float],
    encoder: nn.Module,
    output_p: float,
    move_anchor: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected gradient ascent of ||Enc(x1) - Enc(x0)||_p over pairs at exactly `radius`
    (l2 or linf) inside the box, from (x0, x1); with `move_anchor` x0 climbs too (the claim
    covers every x0 of the data range, not only real inputs). Returns the best pair seen
    per row and its gap: never worse than the start."""
    shape = (-1, *([1] * (x0.dim() - 1)))
    best0, best1 = x0.detach(), x1.detach()
    best_gap = torch.full((len(x0),), -1.0)
    for step in range(RADIUS_ASCENT_STEPS + 1):
        a = x0.detach().requires_grad_(move_anchor)
        b = x1.detach().requires_grad_(True)
        with torch.enable_grad():
            gap = _output_distance(encoder, b, a, output_p)
            grads = torch.autograd.grad(gap.sum(), (a, b) if move_anchor else (b,))
        better = (gap.detach() > best_gap).view(shape)
        best0, best1 = (
            torch.where(better, a.detach(), best0),
            torch.where(better, b.detach(), best1),
        )
        best_gap = torch.maximum(gap.detach(), best_gap)
        if step == RADIUS_ASCENT_STEPS:
            break
        size = _step_size(radius, step)
        if move_anchor:
            x0 = (a.detach() + _ascent_step(grads[0], norm, size)).clamp(*box)
        # A step then back onto the sphere: for a linear encoder a damped power iteration
        # towards its top singular direction.
        moved = b.detach() + _ascent_step(grads[-1], norm, size) - x0
        x1 = _fill_radius(x0, _onto_ball(moved, radius, norm, exact=True), radius, norm, box)
    return best0, best1, best_gap


def _ascend_l1(
    x0: torch.Tensor,
    radius: float,
    box: tuple[float, float],
    encoder: nn.Module,
    output_p: float,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The l1 search: a convex gap peaks at a vertex of the ball, so it starts at the best
    of all vertices (`_best_vertices`, inputs up to MAX_VERTEX_SEARCH values) and each step
    jumps to the vertex that maximises the linearised gap (`_l1_vertex`), kept only if the
    gap grew. Returns the best x1 per row and its gap."""
    with torch.no_grad():
        target = encoder(x0)

    def gap_and_grad(x1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x1 = x1.detach().requires_grad_(True)
        with torch.enable_grad():
            gap = torch.linalg.vector_norm((encoder(x1) - target).flatten(1), ord=output_p, dim=1)
            (grad,) = torch.autograd.grad(gap.sum(), x1)
        return gap.detach(), grad

    shape = (-1, *([1] * (x0.dim() - 1)))
    x1 = _random_directions(x0, radius, "l1", box, gen)
    if x0[0].numel() <= MAX_VERTEX_SEARCH:
        x1 = _best_vertices(x0, radius, box, encoder, output_p)
    best, best_gap = x1.detach(), torch.full((len(x0),), -1.0)
    for _ in range(RADIUS_ASCENT_STEPS):
        gap, grad = gap_and_grad(x1)
        better = (gap > best_gap).view(shape)
        best, best_gap = torch.where(better, x1.detach(), best), torch.maximum(gap, best_gap)
        candidate = _l1_vertex(x0, grad, radius, box)
        with torch.no_grad():
            new_gap = _output_distance(encoder, candidate, x0, output_p)
        # Ties go to the vertex: under an isometry (identity encoder) every point of the
        # sphere has the same gap, and a vertex concentrates it (worst for Laplace noise).
        keep = (new_gap >= gap * (1 - 1e-6)).view(shape)
        x1 = torch.where(keep, candidate, x1.detach())
    gap, _ = gap_and_grad(x1)
    better = (gap >= best_gap).view(shape)
    return torch.where(better, x1.detach(), best), torch.maximum(gap, best_gap)


def worst_case_radius_pairs(
    x0: torch.Tensor,
    radius: float,
    norm: Norm,
    box: tuple[float, float],
    encoder: nn.Module,
    output_p: float,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For each row of `x0` (a candidate anchor), the pair within `radius` with the largest
    ||Enc(x1) - Enc(x0)||_p found, and that gap: (x0', x1, gap).

    l2 / linf: projected gradient ascent (`_ascend_sphere`, RADIUS_ASCENT_STEPS steps,
    anchor moving too) from two starts per anchor, a random direction and the encoder's
    most stretched direction at the anchor (`top_directions`; its sign for linf), keeping
    the better end: for a linear encoder the second start is already the worst case, for
    a network it is where the local sensitivity is largest. l1: the vertex search of
    `_ascend_l1` at the anchor."""
    if norm == "l1":
        x1, gap = _ascend_l1(x0, radius, box, encoder, output_p, gen)
        return x0, x1, gap
    starts = [torch.randn(x0.shape, generator=gen, dtype=x0.dtype)]
    try:
        top = top_directions(encoder, x0, gen)
        starts.append(top.sign() if norm == "linf" else top)
    except RuntimeError:  # autograd cannot take the Jacobian products: the random start only
        pass
    k = len(x0)
    anchors = x0.repeat(len(starts), *[1] * (x0.dim() - 1))
    first = torch.cat(
        [
            _fill_radius(
                x0, _onto_ball(_inward(x0, d, box), radius, norm, exact=True), radius, norm, box
            )
            for d in starts
        ]
    )
    a, b, gap = _ascend_sphere(anchors, first, radius, norm, box, encoder, output_p, True)
    pick = gap.view(len(starts), k).argmax(0) * k + torch.arange(k)
    return a[pick], b[pick], gap[pick]


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
    """Pairs (x0, x1) with ||x1 - x0|| <= radius inside the box: `n_random` random
    directions at the first n_random anchors, then the `n_worst` worst-case pairs found
    from the remaining anchors (`worst_case_radius_pairs` from each, the largest gaps kept,
    in anchor order); random directions instead when there is no differentiable encoder.
    Needs n_random + n_worst anchors at least."""
    x0 = anchors[:n_random]
    pairs = [
        (a, b, "random")
        for a, b in zip(x0, _random_directions(x0, radius, norm, box, gen), strict=True)
    ]
    candidates = anchors[n_random:]
    worst = None
    if encoder is not None and n_worst > 0:
        try:
            worst = worst_case_radius_pairs(candidates, radius, norm, box, encoder, output_p, gen)
        except RuntimeError:  # not differentiable: random directions instead
            worst = None
    if worst is not None:
        a, b, gap = worst
        kept = gap.argsort(descending=True, stable=True)[:n_worst].sort().values
        pairs += [(a[i], b[i], "worst-case") for i in kept.tolist()]
    elif n_worst > 0:
        base = candidates[:n_worst]
        pairs += [
            (u, v, "random")
            for u, v in zip(base, _random_directions(base, radius, norm, box, gen), strict=True)
        ]
    return [InputPair(u, v, kind, float(_norms((v - u)[None], norm)[0])) for u, v, kind in pairs]


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
