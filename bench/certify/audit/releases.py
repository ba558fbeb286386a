"""Where the audit's releases of one input come from: the mechanism's own `release()`, or,
when that release is shown to be its encoder's output plus its declared noise, that sum
drawn directly (one encoder pass per input instead of one per release).

Why. An audit draws millions of releases of the same few inputs. For a mechanism whose
release is Enc(x) + N with N from its declared noise model (`Mechanism.noise()`), every one
of those `release()` calls repeats the same encoder pass; on an image task with a network
encoder that pass is nearly all of the audit's time, and the cost budget
(`registry.DEFAULT_COST`) then caps the audit far below its planned size.

Soundness. The shortcut is taken for an input only after a check: `CHECK_ROWS` releases of
that input through `release()` and the same rows drawn as Enc(x) + noise from a generator in
the same state must agree to within `CHECK_TOLERANCE` of the noise scale on every
coordinate, with every row released. A release that adds no noise, other noise, noise of
another scale, noise drawn in another order, a ⊥ or any input-dependent step beyond the
encoder fails the check, and that input's releases all go through `release()`; so does an
input whose encoder output is not finite (no tolerance is meaningful around it). What the
check cannot see is a departure on a fraction of draws far below 1 / CHECK_ROWS that leaves
the shared noise draws in place; the audit then measures the described mechanism, which the
white-box attacks assume too (`encoder()`, `noise()`), and the plug-in contract
(bench.plugin.checks) tests `release()` against that description separately.

Scores drawn from their law. The Gaussian audit's test is a projection onto a direction v
(core.distinguishers); for a described release Enc(x) + sigma Z that score is
Enc(x).v + sigma ||v|| z with z ~ N(0, 1) exactly, so `Described.projections` draws it as one
normal per release instead of D: the same distribution of every score, hence of every error
count and bound, at a cost that does not grow with the release's size.

Agreement within the tolerance rather than bit-equality: the encoder run on one input and on
a batch of copies may round differently (batched kernels), by a few float32 ulps of Enc(x);
a shift of 1e-4 noise scales moves any test's error rates by far less than the audit's
confidence bounds resolve."""

from __future__ import annotations

from collections.abc import Callable

import torch

from bench.certify.audit.result import audit_generator
from bench.core.device import host_view
from bench.core.errors import MechanismOutputError
from bench.plugin.protocols import Mechanism, NoiseModel

# A source of releases of one input: m -> (values flattened to (m, D) float32, released
# mask (m,) bool), drawn from the generator it is given.
Draw = Callable[[int, torch.Generator], tuple[torch.Tensor, torch.Tensor]]

CHECK_ROWS = 256  # releases of each input compared between release() and its description
CHECK_TOLERANCE = 1e-4  # ... to within this many noise scales (plus float rounding of Enc)
PATH_RELEASE = "release()"
PATH_DESCRIBED = "encoder output + declared noise"


def described_form(mechanism: Mechanism) -> bool:
    """Whether the mechanism describes its release as encoder output plus declared noise at
    all (an encoder and a noise model): only then can the check of `Releases` pass."""
    return mechanism.encoder() is not None and mechanism.noise() is not None


class Described:
    """Releases of one input drawn as its encoder output plus the declared noise (a Draw),
    and, for Gaussian noise, projections of such releases drawn from their exact law."""

    def __init__(self, mean: torch.Tensor, noise: NoiseModel) -> None:
        self.mean, self.noise = mean.float(), noise  # mean: Enc(x) with a batch axis of 1
        self.shape = tuple(mean.shape[1:])
        self.flat = self.mean.reshape(-1).double()

    def __call__(self, m: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        values = self.mean.expand(m, *self.shape) + self.noise.sample((m, *self.shape), gen)
        return values.reshape(m, -1), torch.ones(m, dtype=torch.bool)

    def projections(self, m: int, gen: torch.Generator, v: torch.Tensor) -> torch.Tensor | None:
        """float64 scores (release . v) of m releases, drawn as Enc(x).v + sigma ||v|| z
        (z ~ N(0, 1): a projection of isotropic Gaussian noise is Gaussian with variance
        sigma^2 ||v||^2); None for other noise, whose releases must be drawn whole."""
        if self.noise.kind != "gaussian":
            return None
        v = v.double()
        centre, spread = float(self.flat @ v), self.noise.scale * float(v.norm())
        return centre + spread * torch.randn(m, generator=gen, dtype=torch.float64)


class Releases:
    """Blocks of releases of single inputs, through `release()` or its checked description.

    One read-only batch of `block` copies per input serves every `release()` block (the last
    one a prefix of it); `check_unmodified` then demands each batch is unchanged, so a
    mechanism that writes into its input (a contract violation) is refused rather than
    audited on corrupted inputs. With `described`, each input first gets the check of the
    module docstring, once per input (the same tensor object asks again for free: selection,
    directions and evaluation draw from the same few inputs); `paths` records which source
    every input got, in order."""

    def __init__(self, mechanism: Mechanism, block: int, seed: int, described: bool) -> None:
        self.mechanism, self.block, self.seed = mechanism, block, seed
        self.described = described and described_form(mechanism)
        self._batches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._checked: dict[int, tuple[torch.Tensor, Described | None]] = {}
        self.paths: list[str] = []

    def source(self, x: torch.Tensor) -> Draw:
        """A function drawing m releases of `x` (module docstring: which ones)."""
        described = self._checked_description(x) if self.described else None
        self.paths.append(PATH_RELEASE if described is None else PATH_DESCRIBED)
        return described or self._through_release(x, self.block)

    def describes(self, x: torch.Tensor) -> bool:
        """Whether the releases of `x` would be drawn from the checked description."""
        return self.described and self._checked_description(x) is not None

    def _checked_description(self, x: torch.Tensor) -> Described | None:
        """`_described(x)`, computed once per input tensor (keyed by identity, the tensor
        kept alive beside its entry so its id cannot be reused)."""
        hit = self._checked.get(id(x))
        if hit is None or hit[0] is not x:
            hit = self._checked[id(x)] = (x, self._described(x))
        return hit[1]

    def _through_release(self, x: torch.Tensor, rows: int) -> Draw:
        """Releases of `x` by `release()` on prefixes of one read-only batch of `rows` copies."""
        batch = x.expand(rows, *x.shape).clone()
        self._batches.append((x, batch))
        mechanism = self.mechanism

        def draw(m: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
            release = mechanism.release(batch[:m], gen)
            return release.values.reshape(m, -1).float(), release.released.bool()

        return draw

    def _described(self, x: torch.Tensor) -> Described | None:
        """Enc(x) + declared noise as a Draw, if it agrees with `release()` on CHECK_ROWS
        releases of `x` from one generator state (module docstring); else None."""
        encoder, noise = host_view(self.mechanism.encoder()), self.mechanism.noise()
        try:
            with torch.no_grad():
                mean = encoder(x.unsqueeze(0)).float()
        except Exception:  # an encoder that does not take the raw input (e.g. token ids)
            return None
        if not bool(torch.isfinite(mean).all()):  # inf would make the slack below infinite
            return None
        draw, peak = Described(mean, noise), float(mean.abs().max()) if mean.numel() else 0.0
        rows = min(CHECK_ROWS, self.block)
        actual, kept = self._through_release(x, rows)(rows, audit_generator(self.seed, "check"))
        expected, _ = draw(rows, audit_generator(self.seed, "check"))
        if actual.shape != expected.shape or not bool(kept.all()):
            return None
        slack = CHECK_TOLERANCE * noise.scale + 1e-5 * peak
        return draw if bool(((actual - expected).abs() <= slack).all()) else None

    def path(self) -> str:
        """Where the releases came from, in a few words ("release()", the description, or
        both when inputs differed)."""
        found = list(dict.fromkeys(self.paths))
        return " and ".join(found) if found else PATH_RELEASE

    def check_unmodified(self) -> None:
        for x, batch in self._batches:
            if not torch.equal(batch, x.expand_as(batch)):
                raise MechanismOutputError(
                    "release() modified its input in place; the audit needs it unchanged"
                )
