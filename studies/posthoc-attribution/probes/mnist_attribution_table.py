"""The MNIST attribution table of the study's README, from the committed board of
posthoc-attribution-mnist (the Fashion-MNIST chain's switches applied on MNIST) and the
paper's MNIST Table 1 cells in bench/report/reproduce/reference/posthoc.toml: accuracy [95%
CI] and DeltaP of each cumulative step per obfuscator at eps 5 and 10, each step's share of
the gap to the paper, what is left after the chain, and the PTR audit of the not-private
rows. It prints the tables, or with --write puts them in studies/posthoc-attribution/README.md
between `<!-- mnist-attribution-table:begin -->` and `<!-- mnist-attribution-table:end -->`
(tests/studies/test_posthoc_attribution_table.py holds the README to it).

The row matching (a step's parameters, every other one at its default) is the Fashion-MNIST
table's (posthoc_attribution_table.py, beside this file).

    python studies/posthoc-attribution/probes/mnist_attribution_table.py [--write]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def _fmnist_table() -> ModuleType:
    """The Fashion-MNIST table script beside this one (the probes are not a package)."""
    path = Path(__file__).with_name("posthoc_attribution_table.py")
    spec = importlib.util.spec_from_file_location("posthoc_attribution_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


base = _fmnist_table()
BOARD = "posthoc-attribution-mnist"
VARIANTS = base.VARIANTS
EPS = (5.0, 10.0)
REFERENCE_TRAINING = {**base.REFERENCE_TRAINING, "obf_epochs": 300}
ARL_WEIGHTS = base.ARL_WEIGHTS
CHECKPOINT = {**REFERENCE_TRAINING, **ARL_WEIGHTS, "checkpoint": "reference-code"}
NO_FINETUNE = {**CHECKPOINT, "finetune_epochs": 0}
CLASSIFIER = {**NO_FINETUNE, "classifier": "reference-code"}
# (label, the step's own parameters; a {variant: value} parameter applies to those only)
STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("0 bench default (3k)", BOARD, {}),
    ("1 + reference-code sensitivity (not private)", BOARD, {"sensitivity": "reference-code"}),
    ("2 + reference-code training (not private)", BOARD, REFERENCE_TRAINING),
    (
        "3 + reference-code ARL weights (not private)",
        BOARD,
        {**REFERENCE_TRAINING, **ARL_WEIGHTS},
    ),
    ("4 + reference-code checkpoint rule (not private)", BOARD, CHECKPOINT),
    ("6 + no noise fine-tuning of the classifier (not private)", BOARD, NO_FINETUNE),
    ("8 + reference-code classifier (not private)", BOARD, CLASSIFIER),
    ("9 + reference-code adversary (not private)", BOARD, {**CLASSIFIER, **base.DECODER}),
)
ARL_AT_0_9 = {**NO_FINETUNE, "alpha": {"arl": 0.9, "arl-c-n": 0.9}}  # step 6, arl's weight
SIDE_STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("6 + ARL weight 0.9 in place of 0.995, beside the chain (not private)", BOARD, ARL_AT_0_9),
)


def trained_as(variant: str, own: dict[str, Any]) -> str:
    """The variant whose row a step's row of `variant` is: under the public code's recipe c
    trains its obfuscator exactly as encoder does (no contrastive term), so the suite runs
    encoder's row only."""
    return "encoder" if variant == "c" and own.get("recipe") == "reference-code" else variant


def find(rows: list[dict[str, Any]], own: dict[str, Any], variant: str, eps: float) -> dict | None:
    return base.find(rows, own, trained_as(variant, own), eps)


def carried(index: int, variant: str, group: tuple) -> bool:
    """A row whose switch does not apply to the variant repeats the row it starts from: a
    step (the ARL weights and the adversary for a variant without an ARL term) the step
    before, a row beside the chain its step 6 (the ARL weight of arl-c-n, for the others)."""
    if group is STEPS:
        return base.carried(index, variant, STEPS)
    own = group[index][2]
    return base.own_params(own, variant) == base.own_params(NO_FINETUNE, variant)


def rows_from(start: int) -> list[tuple[int, tuple]]:
    """The chain's steps from index `start` on, then the rows beside it, as (index, group)."""
    return [(i, STEPS) for i in range(start, len(STEPS))] + [
        (i, SIDE_STEPS) for i in range(len(SIDE_STEPS))
    ]


def main() -> None:
    ref = base.paper("posthoc-mnist")
    rows = base.utility_rows(BOARD)
    for variant in VARIANTS:
        print(f"\n**{variant}**\n")
        print("| step | DeltaP | " + " | ".join(f"eps {e:g}" for e in EPS) + " |")
        print("|---|---|" + "---|" * len(EPS))
        print("| paper (Table 1) | | " + " | ".join(f"{ref[(variant, e)]:.3f}" for e in EPS) + " |")
        for index, group in rows_from(0):
            label, _, own = group[index]
            if group is SIDE_STEPS and carried(index, variant, group):
                continue
            if carried(index, variant, group):
                print(f"| {label} | as the step before (no ARL term) |" + " |" * len(EPS))
                continue
            found = [find(rows, own, variant, e) for e in EPS]
            same = " (encoder's row)" if trained_as(variant, own) != variant else ""
            cells = " | ".join(base.cell(f) for f in found)
            print(f"| {label}{same} | {base.cell(found[0], 'delta_p')} | {cells} |")
    shares(rows, ref)
    left(rows, ref)
    ceiling(rows, ref)
    audit(rows)


def _mean(rows: list[dict[str, Any]], own: dict[str, Any], eps: float) -> float | None:
    found = [find(rows, own, v, eps) for v in VARIANTS]
    if any(f is None for f in found):
        return None
    return sum(f["metrics"]["accuracy"]["value"] for f in found) / len(found)  # type: ignore[index]


def shares(rows: list[dict[str, Any]], ref: dict[tuple[str, float], float]) -> None:
    """Each step's mean accuracy over the four variants, and its share of the gap (paper -
    step 0) it closes against the step before."""
    print("\n**Share of the gap to the paper closed by each step** (mean accuracy over the")
    print("four variants; gap = paper - step 0)\n")
    print("| step | eps 5 | eps 10 |")
    print("|---|---|---|")
    paper_mean = {e: sum(ref[(v, e)] for v in VARIANTS) / len(VARIANTS) for e in EPS}
    first = {e: _mean(rows, STEPS[0][2], e) for e in EPS}
    before: dict[float, float | None] = {}
    for label, _, own in STEPS:
        text = []
        for e in EPS:
            value = _mean(rows, own, e)
            if value is None:
                text.append("not run")
            elif not before:
                text.append(f"{value:.3f} (gap {paper_mean[e] - value:.3f})")
            else:
                step, gap = value - before[e], paper_mean[e] - first[e]  # type: ignore[operator]
                text.append(f"{value:.3f} ({step:+.3f}: {100 * step / gap:.0f}% of the gap)")
        print(f"| {label} | " + " | ".join(text) + " |")
        before = {e: _mean(rows, own, e) for e in EPS}
    print(f"| paper (Table 1) | {paper_mean[5.0]:.3f} | {paper_mean[10.0]:.3f} |")


def left(rows: list[dict[str, Any]], ref: dict[tuple[str, float], float]) -> None:
    """bench - paper at each step from the checkpoint rule on and beside the chain; ok:
    within 0.05 of the paper or the paper inside bench's 95% CI."""
    print("\n**What is left** (bench - paper from step 4 on and beside the chain; ok: within")
    print("0.05 of the paper or the paper inside bench's 95% CI)\n")
    print("| variant | row | eps 5 | eps 10 |")
    print("|---|---|---|---|")
    for variant in VARIANTS:
        for index, group in rows_from(4):
            label, _, own = group[index]
            if carried(index, variant, group):
                continue
            out = [base.gap_cell(find(rows, own, variant, e), ref[(variant, e)]) for e in EPS]
            name = "beside: ARL weight 0.9" if group is SIDE_STEPS else f"step {label.split()[0]}"
            print(f"| {variant} | {name} | " + " | ".join(out) + " |")


CEILING_EPS = 1000.0
CEILING = (
    ("bench default (step 0's networks)", {}),
    ("step 6's networks (ARL weight 0.9 for arl and arl-c-n)", ARL_AT_0_9),
)


def ceiling(rows: list[dict[str, Any]], ref: dict[tuple[str, float], float]) -> None:
    """The same networks at eps 1000, where the release noise is negligible: how much of what
    is left is the noise and how much the trained embedding and classifier."""
    print(f"\n**The noiseless ceiling** (accuracy at eps {CEILING_EPS:g}, where PTR answers and")
    print("its noise is negligible, against the paper at eps 10)\n")
    print("| variant | paper, eps 10 | " + " | ".join(label for label, _ in CEILING) + " |")
    print("|---|---|" + "---|" * len(CEILING))
    for variant in VARIANTS:
        cells = [base.cell(find(rows, own, variant, CEILING_EPS)) for _, own in CEILING]
        print(f"| {variant} | {ref[(variant, 10.0)]:.3f} | " + " | ".join(cells) + " |")


def audit(rows: list[dict[str, Any]]) -> None:
    """The PTR audit on the not-private rows: its 95% lower bound on the claim's scale, the
    claim (2 eps), and what the audit could show on a mechanism exactly at its claim."""
    print("\n**PTR audit of the not-private rows** (eps_audit_lb / claim 2 eps / could show)\n")
    print("| step | variant | " + " | ".join(f"eps {e:g}" for e in EPS) + " |")
    print("|---|---|" + "---|" * len(EPS))
    for index, group in rows_from(1):
        label, _, own = group[index]
        for variant in VARIANTS:
            if carried(index, variant, group) or trained_as(variant, own) != variant:
                continue
            out = [base.audit_cell(find(rows, own, variant, e), e) for e in EPS]
            print(f"| {label} | {variant} | " + " | ".join(out) + " |")


BEGIN, END = "<!-- mnist-attribution-table:begin -->", "<!-- mnist-attribution-table:end -->"


def block() -> str:
    """The page's block: the markers around the tables main() prints."""
    return base.block(main, BEGIN, END)


if __name__ == "__main__":
    base.write(main, BEGIN, END) if "--write" in sys.argv[1:] else main()
