"""Global Lipschitz UPPER bounds of feed-forward torch networks: the sensitivity that output
perturbation calibrates its noise to (IP paper, Sec. IV: Lap-Output l1, Gauss-Output l2).

Norm pairs (the same norm on input and output, over all inputs):
  "l2": sup ||f(x) - f(y)||_2 / ||x - y||_2      "l1": sup ||f(x) - f(y)||_1 / ||x - y||_1

The bound is the product of sound per-layer bounds (Lipschitz constants multiply under
composition); rules per layer:

- Dense layers: the exact induced norm. l2: spectral norm by SVD in float64; l1: the largest
  column abs sum.
- Conv2d: l2: the largest singular value over frequencies of the kernel's transfer matrices
  on an N x N grid, N = input + padding (Sedghi et al. 2019: exact for circular convolution;
  a zero-padded, strided convolution is a crop of that circular one applied to a zero-
  embedded input, so its norm is no larger: an upper bound). l1: exact, the largest column
  abs sum, read off the transposed convolution of |kernel| applied to an all-ones output.
  Power iteration on a layer's operator and its transpose (autograd) gives an estimate
  that converges from BELOW; it is reported and cross-checked, it never certifies.
- Elementwise activations: sup |sigma'|; a diagonal Jacobian with entries <= c is
  c-Lipschitz in every l_p. ReLU, LeakyReLU(<=1), Tanh: 1; Sigmoid: 1/4; exact GELU:
  1.1290 (its slope at x = sqrt 2), so GELU is NOT 1-Lipschitz and counts per layer.
- Normalize (bench.plugin.models) and eval-mode BatchNorm scale channel c by a_c: max |a_c|,
  i.e. 1/min std for Normalize. Translations (the mean) do not count.
- Max pooling: |max a - max b| <= max |a - b| and each input lies in at most m windows
  (m = ceil(extent / stride) per axis): sqrt(m) in l2, m in l1; 1 without overlap.
  Average pooling, divisor D, K-element windows: sqrt(K m) / D in l2 (Cauchy-Schwarz), m / D
  in l1.
- Reshapes, permutations and zero embeddings (Flatten, PixelUnshuffle, ZeroPad2d, Identity,
  Dropout in eval): 1.
- A module with a `lipschitz_upper_bound(norm, in_shape)` method supplies its own certified
  bound. SLL blocks (1 in l2, Araujo et al. 2023, Thm 3) plug in this way, as would sorting
  activations (GroupSort / MaxMin permute within groups: 1-Lipschitz in every l_p by the
  rearrangement inequality).
Anything else is refused: a missing rule must never become a wrong bound.

For "l1" the value is min(product of l1 bounds, sqrt(m) * l2 bound), m the output dimension:
||v||_1 <= sqrt(m) ||v||_2 and ||u||_2 <= ||u||_1 make the second an l1 -> l1 bound as well,
and on deep networks it is usually far smaller. The network itself runs in float32, so the
product is inflated by a relative ROUNDING_MARGIN that its rounding errors cannot reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import _pair

from bench.core.device import CPU, on_device
from bench.core.errors import ConfigError
from bench.plugin.models import Normalize

Norm = Literal["l1", "l2"]
NORMS: tuple[Norm, ...] = ("l1", "l2")
ROUNDING_MARGIN = 1e-4
# max_x d/dx [x Phi(x)] = Phi(sqrt 2) + sqrt 2 phi(sqrt 2), where phi(x)(2 - x^2) vanishes.
GELU_SLOPE = 0.5 * (1 + math.erf(1.0)) + math.sqrt(2) * math.exp(-1.0) / math.sqrt(2 * math.pi)

_SHAPE_ONLY = (
    nn.Flatten,
    nn.Unflatten,
    nn.Identity,
    nn.Dropout,
    nn.PixelShuffle,
    nn.PixelUnshuffle,
    nn.ZeroPad2d,
)


@dataclass(frozen=True)
class LayerBound:
    """One layer's certified bound and, for linear layers, its power-iteration estimate."""

    name: str
    bound: float
    estimate: float | None = None


@dataclass(frozen=True)
class LipschitzBound:
    """A certified upper bound on a network's global Lipschitz constant for one norm pair."""

    norm: Norm
    value: float
    layers: tuple[LayerBound, ...]

    @property
    def product(self) -> float:
        """Product of the per-layer bounds (before the rounding margin and the l1 shortcut)."""
        return math.prod(layer.bound for layer in self.layers)


def spectral_norm(weight: torch.Tensor) -> float:
    """Exact largest singular value of a dense matrix (SVD in float64, of the tall orientation,
    which LAPACK handles far faster than the wide one)."""
    w = weight.detach().double()
    return float(torch.linalg.svdvals(w if w.shape[0] >= w.shape[1] else w.T)[0])


def l1_induced_norm(weight: torch.Tensor) -> float:
    """Exact l1 -> l1 norm of a dense (out, in) matrix: its largest column abs sum."""
    return float(weight.detach().double().abs().sum(0).max())


def linf_induced_norm(weight: torch.Tensor) -> float:
    """Exact l_inf -> l_inf norm of a dense (out, in) matrix: its largest row abs sum."""
    return float(weight.detach().double().abs().sum(1).max())


@dataclass(frozen=True)
class ConvGeometry:
    """Stride, padding, dilation and groups of a zero-padded 2-d convolution."""

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    @classmethod
    def of(cls, conv: nn.Conv2d) -> ConvGeometry:
        if conv.padding_mode != "zeros":
            raise ConfigError(f"Lipschitz bound: {conv} pads with {conv.padding_mode}, not zeros")
        padding = conv.padding
        if isinstance(padding, str):
            if padding != "valid":
                raise ConfigError(f"Lipschitz bound: {conv} needs numeric padding, not 'same'")
            padding = (0, 0)
        return cls(_pair(conv.stride), _pair(padding), _pair(conv.dilation), conv.groups)

    def conv(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, weight, None, self.stride, self.padding, self.dilation, self.groups)


def conv_spectral_bound(
    weight: torch.Tensor, in_hw: tuple[int, int], geometry: ConvGeometry
) -> float:
    """Upper bound on the l2 operator norm of a zero-padded convolution (exact when circular).

    Grid N = input + 2 padding per axis: no output the convolution computes wraps around.
    Groups act block-diagonally, so the norm is the largest over groups.
    """
    k = weight.detach().double()
    dh, dw = geometry.dilation
    if (dh, dw) != (1, 1):
        dilated = k.new_zeros((*k.shape[:2], dh * (k.shape[2] - 1) + 1, dw * (k.shape[3] - 1) + 1))
        dilated[:, :, ::dh, ::dw] = k
        k = dilated
    grid = tuple(
        max(size + 2 * pad, extent)
        for size, pad, extent in zip(in_hw, geometry.padding, k.shape[2:], strict=True)
    )
    per_group = k.shape[0] // geometry.groups
    best = 0.0
    for g in range(geometry.groups):
        transfer = torch.fft.fft2(k[g * per_group : (g + 1) * per_group], s=grid)
        sv = torch.linalg.matrix_norm(transfer.permute(2, 3, 0, 1), ord=2)
        best = max(best, float(sv.max()))
    return best


def conv_l1_norm(weight: torch.Tensor, in_shape: tuple[int, ...], geometry: ConvGeometry) -> float:
    """Exact l1 -> l1 norm of a zero-padded convolution: the largest column abs sum, i.e.
    max of the transposed convolution of |kernel| applied to an all-ones output."""
    w = weight.detach().double().abs()
    out = geometry.conv(torch.zeros((1, *in_shape), dtype=torch.float64), w)
    cols = torch.nn.grad.conv2d_input(
        (1, *in_shape),
        w,
        torch.ones_like(out),
        geometry.stride,
        geometry.padding,
        geometry.dilation,
        geometry.groups,
    )
    return float(cols.max())


def conv_linf_norm(
    weight: torch.Tensor, in_shape: tuple[int, ...], geometry: ConvGeometry
) -> float:
    """Exact l_inf -> l_inf norm of a zero-padded convolution (= l1 norm of its transpose):
    the largest row abs sum, the convolution of |kernel| with an all-ones input."""
    w = weight.detach().double().abs()
    return float(geometry.conv(torch.ones((1, *in_shape), dtype=torch.float64), w).max())


def power_iteration(
    op: Callable[[torch.Tensor], torch.Tensor],
    in_shape: tuple[int, ...],
    *,
    iters: int = 100,
    seed: int = 0,
) -> float:
    """Estimate of the l2 norm of a linear map by power iteration on op^T op, the transpose
    taken by autograd (float32: an estimate needs no float64). It converges from below and
    is never a certificate."""
    v = torch.randn((1, *in_shape), generator=torch.Generator().manual_seed(seed))
    v = v / v.norm()
    with torch.enable_grad():
        for _ in range(iters):
            v.requires_grad_(True)
            u = op(v)
            (w,) = torch.autograd.grad(u, v, grad_outputs=u)
            norm = w.norm()
            if norm == 0:
                return 0.0
            v = (w / norm).detach()
    with torch.no_grad():
        return float(op(v).norm())


def _pool_overlap(kernel: int, stride: int, dilation: int = 1) -> int:
    """How many pooling windows along one axis can contain the same input position."""
    return min(kernel, math.ceil((dilation * (kernel - 1) + 1) / stride))


def _pool_bound(layer: nn.Module, norm: Norm) -> float:
    kh, kw = _pair(layer.kernel_size)
    sh, sw = _pair(layer.stride if layer.stride is not None else layer.kernel_size)
    if isinstance(layer, nn.MaxPool2d):
        dh, dw = _pair(layer.dilation)
        m = _pool_overlap(kh, sh, dh) * _pool_overlap(kw, sw, dw)
        return math.sqrt(m) if norm == "l2" else float(m)
    if layer.ceil_mode or (not layer.count_include_pad and _pair(layer.padding) != (0, 0)):
        raise ConfigError(f"Lipschitz bound: {layer} has border windows with other divisors")
    divisor = layer.divisor_override or kh * kw
    m = _pool_overlap(kh, sh) * _pool_overlap(kw, sw)
    return math.sqrt(kh * kw * m) / divisor if norm == "l2" else m / divisor


def _activation_slope(layer: nn.Module) -> float | None:
    """sup |sigma'| of an elementwise activation, None if `layer` is not one we know."""
    if isinstance(layer, nn.ReLU | nn.ReLU6 | nn.Tanh | nn.Hardtanh | nn.Softplus):
        return 1.0
    if isinstance(layer, nn.Sigmoid):
        return 0.25
    if isinstance(layer, nn.LeakyReLU):
        return max(1.0, abs(layer.negative_slope))
    if isinstance(layer, nn.ELU):
        return max(1.0, layer.alpha)
    if isinstance(layer, nn.GELU):
        if layer.approximate != "none":
            raise ConfigError("Lipschitz bound: only the exact GELU (approximate='none')")
        return GELU_SLOPE
    return None


def layer_bound(
    layer: nn.Module, norm: Norm, in_shape: tuple[int, ...], *, estimate: bool = False
) -> LayerBound:
    """Certified bound of one leaf layer for `norm`, with a power-iteration estimate (l2,
    linear layers) when `estimate`."""
    name = type(layer).__name__
    custom = getattr(layer, "lipschitz_upper_bound", None)
    if callable(custom):
        return LayerBound(name, float(custom(norm, in_shape)))
    if isinstance(layer, nn.Linear):
        w = layer.weight
        bound = spectral_norm(w) if norm == "l2" else l1_induced_norm(w)
        guess = None
        if estimate and norm == "l2":
            guess = power_iteration(lambda v: F.linear(v, w.detach()), in_shape)
        return LayerBound(name, bound, guess)
    if isinstance(layer, nn.Conv2d):
        geometry = ConvGeometry.of(layer)
        w = layer.weight
        if norm == "l2":
            bound = conv_spectral_bound(w, (in_shape[1], in_shape[2]), geometry)
        else:
            bound = conv_l1_norm(w, in_shape, geometry)
        guess = None
        if estimate and norm == "l2":
            guess = power_iteration(lambda v: geometry.conv(v, w.detach()), in_shape)
        return LayerBound(name, bound, guess)
    if isinstance(layer, Normalize):
        return LayerBound(name, float(1.0 / layer.std.detach().double().abs().min()))
    if isinstance(layer, nn.BatchNorm1d | nn.BatchNorm2d):
        if layer.training or layer.running_var is None:
            raise ConfigError("Lipschitz bound: BatchNorm needs eval mode with running stats")
        scale = 1.0 / torch.sqrt(layer.running_var.double() + layer.eps)
        if layer.weight is not None:
            scale = scale * layer.weight.detach().double().abs()
        return LayerBound(name, float(scale.max()))
    if isinstance(layer, nn.MaxPool2d | nn.AvgPool2d):
        return LayerBound(name, _pool_bound(layer, norm))
    slope = _activation_slope(layer)
    if slope is not None:
        return LayerBound(name, slope)
    if isinstance(layer, _SHAPE_ONLY):
        return LayerBound(name, 1.0)
    raise ConfigError(
        f"no Lipschitz rule for layer {name}; give it a lipschitz_upper_bound(norm, in_shape) "
        "method that returns a certified bound"
    )


def _leaves(model: nn.Module) -> Iterator[nn.Module]:
    """The layers of a (nested) nn.Sequential in execution order; other modules are leaves."""
    if isinstance(model, nn.Sequential):
        for child in model:
            yield from _leaves(child)
    else:
        yield model


def lipschitz_upper_bound(
    model: nn.Module, input_shape: tuple[int, ...], norm: Norm = "l2", *, estimate: bool = False
) -> LipschitzBound:
    """Certified global Lipschitz upper bound of `model` (in eval mode) on inputs of
    `input_shape` for the norm pair `norm` (see the module docstring for every rule).
    Computed on the CPU (float64 rules), from a CPU copy of a model on an accelerator."""
    if norm not in NORMS:
        raise ConfigError(f"Lipschitz bound: norm must be one of {NORMS}, got {norm!r}")
    model = on_device(model, CPU)
    was_training = model.training
    model.eval()
    try:
        x = torch.zeros((1, *input_shape))
        layers = []
        with torch.no_grad():
            for layer in _leaves(model):
                layers.append(layer_bound(layer, norm, tuple(x.shape[1:]), estimate=estimate))
                x = layer(x)
    finally:
        model.train(was_training)
    bound = LipschitzBound(norm, 0.0, tuple(layers))
    value = bound.product * (1 + ROUNDING_MARGIN)
    if norm == "l1":
        via_l2 = math.sqrt(x[0].numel()) * lipschitz_upper_bound(model, input_shape, "l2").value
        value = min(value, via_l2)
    return LipschitzBound(norm, value, bound.layers)


def l2_upper_bound(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """Certified bound on sup ||f(x) - f(y)||_2 / ||x - y||_2."""
    return lipschitz_upper_bound(model, input_shape, "l2").value


def l1_upper_bound(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """Certified bound on sup ||f(x) - f(y)||_1 / ||x - y||_1."""
    return lipschitz_upper_bound(model, input_shape, "l1").value
