"""The attribution ("waterfall") table of the study's README, from the committed boards of the
posthoc-attribution suites (subset, checkpoint, the chain's steps 5-7, classifier,
adversary, seeds, beside) and the paper's Table 1 cells in
bench/report/reproduce/reference/posthoc.toml: accuracy [95% CI] of each cumulative step per
obfuscator and eps, DeltaP per step, and each
step's share of the gap to the paper at eps 5 and 10. It prints the table, or with --write
puts it in studies/posthoc-attribution/README.md between `<!-- attribution-table:begin -->`
and `<!-- attribution-table:end -->` (tests/studies/test_posthoc_attribution_table.py holds
the README to it). The boards' rows name `posthoc-ptr` with the switches among its parameters
(the mechanism of the version they ran at); rows of a re-run name the study mechanism.

    python studies/posthoc-attribution/probes/posthoc_attribution_table.py [--write]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
STUDY_DIR = ROOT / "studies" / "posthoc-attribution"
# The mechanism names a row of the study has: the product's, on the committed boards (before
# the switches left it), and the study mechanism's, on a board re-run since.
MECHANISMS = ("posthoc-ptr", "studies.posthoc_attribution.mechanism:PosthocPTRReferenceCode")
VARIANTS = ("encoder", "arl", "c", "arl-c-n")
EPS = (1.0, 2.0, 5.0, 10.0)
# (label, board, the step's own parameters; every other parameter at its default). A
# parameter given as {variant: value} applies to those variants only: the others keep its
# default, so their row is the step before's.
REFERENCE_TRAINING = {"sensitivity": "reference-code", "recipe": "reference-code"}
ARL_WEIGHTS = {"alpha": {"arl": 0.9, "arl-c-n": 0.995}}
FULL_SET = {
    **REFERENCE_TRAINING,
    "vae_epochs": 2,
    "obf_epochs": 30,
    **ARL_WEIGHTS,
    "checkpoint": "reference-code",
}
HAND_SET = {"encoder": 2.5, "c": 3.9, "arl": 1.3, "arl-c-n": 0.3}  # the sweep's DeltaP
CLASSIFIER = {**FULL_SET, "finetune_epochs": 0, "classifier": "reference-code"}
DECODER = {"adversary": {"arl": "reference-code", "arl-c-n": "reference-code"}}  # ARL only
STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("0 bench default (5k)", "posthoc-attribution-subset", {}),
    (
        "1 + reference-code sensitivity (not private)",
        "posthoc-attribution-subset",
        {"sensitivity": "reference-code"},
    ),
    (
        "2 + reference-code training (not private)",
        "posthoc-attribution-subset",
        {**REFERENCE_TRAINING, "obf_epochs": 300},
    ),
    (
        "3 + reference-code ARL weights (not private)",
        "posthoc-attribution-subset",
        {**REFERENCE_TRAINING, "obf_epochs": 300, **ARL_WEIGHTS},
    ),
    (
        "4 + reference-code checkpoint rule (not private)",
        "posthoc-attribution-checkpoint",
        {**REFERENCE_TRAINING, "obf_epochs": 300, **ARL_WEIGHTS, "checkpoint": "reference-code"},
    ),
    ("5 + full training set, 50k (not private)", "posthoc-attribution", FULL_SET),
    (
        "6 + no noise fine-tuning of the classifier (not private)",
        "posthoc-attribution",
        {**FULL_SET, "finetune_epochs": 0},
    ),
    (
        "7 + reference-code hand-set DeltaP, PTR test kept (not private)",
        "posthoc-attribution",
        {
            **FULL_SET,
            "finetune_epochs": 0,
            "proposal": HAND_SET,
        },
    ),
    (
        "8 + reference-code classifier (not private)",
        "posthoc-attribution-classifier",
        {**CLASSIFIER, "proposal": HAND_SET},
    ),
    (
        "9 + reference-code adversary (not private)",
        "posthoc-attribution-adversary",
        {**CLASSIFIER, "proposal": HAND_SET, **DECODER},
    ),
)
# Rows beside the cumulative chain (not in the shares): steps 8 and 9 with the calibrated
# DeltaP in place of the hand-set one, where PTR answers most queries; the chain's last step
# trained at three seeds (a board row is the mean over them), without and with bench's
# fine-tuning of the classifier on the kept f; step 6 with arl-c-n's ARL weight at arl's 0.9;
# step 6 with the public code's decoder and bench's classifier. A variant a side row's board
# does not hold has no line for it.
SEEDS_BOARD = "posthoc-attribution-seeds"  # its audit is seed 0's: the chain's own row
SIDE_STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "6 + reference-code classifier, beside the chain (not private)",
        "posthoc-attribution-classifier",
        CLASSIFIER,
    ),
    (
        "6 + reference-code classifier and adversary, beside the chain (not private)",
        "posthoc-attribution-adversary",
        {**CLASSIFIER, **DECODER},
    ),
    (
        "9 at seeds 0, 1 and 2, mean of the three trainings (not private)",
        SEEDS_BOARD,
        {**CLASSIFIER, "proposal": HAND_SET, **DECODER},
    ),
    (
        "9 + the classifier fine-tuned on the kept f, mean of seeds 0, 1 and 2 (not private)",
        SEEDS_BOARD,
        {**CLASSIFIER, "finetune_epochs": 5, "proposal": HAND_SET, **DECODER},
    ),
    (
        "6 + ARL weight 0.9 in place of 0.995, mean of seeds 0, 1 and 2 (not private)",
        "posthoc-attribution-beside",
        {**FULL_SET, "finetune_epochs": 0, "alpha": {"arl-c-n": 0.9}},
    ),
    (
        "6 + reference-code adversary (bench's classifier), mean of seeds 0, 1 and 2 (not private)",
        "posthoc-attribution-beside",
        {**FULL_SET, "finetune_epochs": 0, **DECODER},
    ),
)
SHORT = {  # column and row names of the "What is left" table
    SIDE_STEPS[0][0]: "step 6 + classifier",
    SIDE_STEPS[1][0]: "step 6 + classifier, adversary",
    SIDE_STEPS[2][0]: "step 9, mean of seeds 0-2",
    SIDE_STEPS[3][0]: "step 9 + fine-tuned classifier, mean of seeds 0-2",
    SIDE_STEPS[4][0]: "step 6, ARL weight 0.9, mean of seeds 0-2",
    SIDE_STEPS[5][0]: "step 6 + adversary, mean of seeds 0-2",
}
DEFAULTS = {
    "sensitivity": "l1",
    "recipe": "bench",
    "lipschitz_method": "auto",
    "obf_epochs": 30,
    "vae_epochs": 20,
    "alpha": 0.99,
    "checkpoint": "last",
    "proposal": 0.0,
    "finetune_epochs": 5,
    "classifier": "bench",
    "adversary": "bench",
}


def own_params(own: dict[str, Any], variant: str) -> dict[str, Any]:
    """A step's parameters for one variant (per-variant values resolved, the rest kept)."""
    out = {}
    for key, value in own.items():
        if not isinstance(value, dict):
            out[key] = value
        elif variant in value:
            out[key] = value[variant]
    return out


def carried(step: int, variant: str, group: tuple = STEPS) -> bool:
    """True when row `step` of `group` changes nothing for this variant: the same parameters
    as the row before, because its per-variant switch does not apply to it (its board may
    not hold the variant at all)."""
    if step == 0:
        return False
    own, before = group[step][2], group[step - 1][2]
    return own_params(own, variant) == own_params(before, variant)


def all_rows() -> list[tuple[int, tuple]]:
    """Every row of the tables as (index, group): the chain's steps, then the rows beside it;
    `carried(index, variant, group)` compares a row with the one before it in its group."""
    return [(i, STEPS) for i in range(len(STEPS))] + [
        (i, SIDE_STEPS) for i in range(len(SIDE_STEPS))
    ]


def absent(boards: dict[str, list[dict[str, Any]]], index: int, group: tuple, variant: str) -> bool:
    """True for a row beside the chain whose board holds no row of this variant (a chain step
    that did not run still shows, as "not run")."""
    _, board, own = group[index]
    return group is SIDE_STEPS and all(find(boards[board], own, variant, e) is None for e in EPS)


def paper(suite: str = "posthoc-fmnist") -> dict[tuple[str, float], float]:
    """The paper's Table 1 accuracy per (variant, eps) for `suite`'s dataset."""
    reference = ROOT / "bench" / "report" / "reproduce" / "reference" / "posthoc.toml"
    cells = tomllib.loads(reference.read_text())["cell"]
    return {
        (c["params"]["variant"], float(c["params"]["eps"])): float(c["value"])
        for c in cells
        if c.get("suite") == suite and c.get("metric") == "accuracy" and c["id"].startswith("t1-")
    }


def utility_rows(board: str) -> list[dict[str, Any]]:
    path = STUDY_DIR / "boards" / board / "leaderboard.json"
    if not path.exists():
        return []
    rows = json.loads(path.read_text())["rows"]
    return [r for r in rows if r["attack"] is None and r["mechanism"] in MECHANISMS]


def matches(params: dict[str, Any], own: dict[str, Any], variant: str, eps: float) -> bool:
    """True when `params` (a board row's or a suite job's) are the step's for this variant and
    eps, every other parameter at its default; a board written before a parameter existed ran
    at its default."""
    want = {**DEFAULTS, **own_params(own, variant), "variant": variant, "eps": eps}
    return all(params.get(k, DEFAULTS.get(k)) == v for k, v in want.items())


def find(rows: list[dict[str, Any]], own: dict[str, Any], variant: str, eps: float) -> dict | None:
    return next((row for row in rows if matches(row["params"], own, variant, eps)), None)


def cell(row: dict | None, metric: str = "accuracy") -> str:
    if row is None or metric not in row["metrics"]:
        return "not run"
    m = row["metrics"][metric]
    if metric != "accuracy":
        return f"{m['value']:.3g}"
    text = f"{m['value']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]"
    return f"{text}{answered_note(row, ', ')}"


def answered_note(row: dict[str, Any], lead: str) -> str:
    """Accuracy is over the answered queries: `lead` + their share where PTR refused more
    than 5%, else ""."""
    answered = row["metrics"].get("release_rate", {}).get("value", 1.0)
    return "" if answered >= 0.95 else f"{lead}{answered:.0%} answered"


def main() -> None:
    ref = paper()
    boards = {b: utility_rows(b) for b in {s[1] for s in STEPS + SIDE_STEPS}}
    for variant in VARIANTS:
        print(f"\n**{variant}**\n")
        print("| step | DeltaP | " + " | ".join(f"eps {e:g}" for e in EPS) + " |")
        print("|---|---|" + "---|" * len(EPS))
        print("| paper (Table 1) | | " + " | ".join(f"{ref[(variant, e)]:.3f}" for e in EPS) + " |")
        for index, group in all_rows():
            label, board, own = group[index]
            if absent(boards, index, group, variant):
                continue
            if carried(index, variant, group):
                before = "step" if group is STEPS else "row"
                print(f"| {label} | as the {before} before (no ARL term) |" + " |" * len(EPS))
                continue
            print(table_row(boards, label, board, own, variant))
    print("\n**Share of the gap to the paper closed by each step** (mean accuracy over the")
    print("variants a step ran, each compared with the step before and the paper on the same")
    print("variants; gap = paper - step 0)\n")
    print("| step | eps 5 | eps 10 |")
    print("|---|---|---|")
    high = (5.0, 10.0)
    paper_mean = [sum(ref[(v, e)] for v in VARIANTS) / len(VARIANTS) for e in high]

    def mean_acc(board: str, own: dict[str, Any], e: float, variants: list[str]) -> float:
        rows = [find(boards[board], own, v, e) for v in variants]
        return sum(r["metrics"]["accuracy"]["value"] for r in rows) / len(rows)  # type: ignore[index]

    prev: tuple[str, dict[str, Any]] | None = None
    for label, board, own in STEPS:
        # the variants this step ran; the step before and the paper over the same ones
        ran = [v for v in VARIANTS if all(find(boards[board], own, v, e) for e in high)]
        if not ran:
            print(f"| {label} | not run | not run |")
            continue
        paper_ran = [sum(ref[(v, e)] for v in ran) / len(ran) for e in high]
        vals = [mean_acc(board, own, e, ran) for e in high]
        if prev is None:
            text = [f"{v:.3f} (gap {g - v:.3f})" for v, g in zip(vals, paper_ran, strict=True)]
        else:
            text = []
            for e, v, g in zip(high, vals, paper_ran, strict=True):
                before = mean_acc(*prev, e, ran)
                first = mean_acc(STEPS[0][1], STEPS[0][2], e, ran)
                share = 100 * (v - before) / (g - first)
                text.append(f"{v:.3f} ({v - before:+.3f}: {share:.0f}% of the gap)")
        note = "" if len(ran) == len(VARIANTS) else f" ({', '.join(ran)})"
        print(f"| {label}{note} | " + " | ".join(text) + " |")
        prev = (board, own)
    print(f"| paper (Table 1) | {paper_mean[0]:.3f} | {paper_mean[1]:.3f} |")
    left_table(boards, ref)
    audit_table(boards)


def table_row(
    boards: dict[str, list[dict[str, Any]]],
    label: str,
    board: str,
    own: dict[str, Any],
    variant: str,
) -> str:
    """One step's line of a variant's table: DeltaP and accuracy [95% CI] per eps."""
    found = [find(boards[board], own, variant, e) for e in EPS]
    return f"| {label} | {cell(found[0], 'delta_p')} | " + " | ".join(cell(r) for r in found) + " |"


def left_table(
    boards: dict[str, list[dict[str, Any]]], ref: dict[tuple[str, float], float]
) -> None:
    """What is left after the last three steps and beside the chain, per variant at eps 5 and
    10: bench - paper, with "ok" where the paper's value lies within 0.05 or inside bench's
    95% CI; a row that changes nothing for the variant is left out."""
    last = all_rows()[len(STEPS) - 3 :]  # the chain's last three steps, then the rows beside it
    print("\n**What is left** (bench - paper after the last three steps and beside the chain;")
    print("ok: within 0.05 of the paper or the paper inside bench's 95% CI)\n")
    print("| variant | row | eps 5 | eps 10 |")
    print("|---|---|---|---|")
    for variant in VARIANTS:
        for index, group in last:
            label, board, own = group[index]
            if carried(index, variant, group) or absent(boards, index, group, variant):
                continue
            out = [
                gap_cell(find(boards[board], own, variant, e), ref[(variant, e)])
                for e in (5.0, 10.0)
            ]
            print(f"| {variant} | {short_label(label)} | " + " | ".join(out) + " |")


def gap_cell(row: dict[str, Any] | None, paper_value: float) -> str:
    """bench - paper for one row's accuracy, "ok" where the paper's value lies within 0.05 or
    inside bench's 95% CI, and the answered share where PTR refused more than 5%."""
    if row is None:
        return "not run"
    m = row["metrics"]["accuracy"]
    ok = abs(m["value"] - paper_value) <= 0.05 or m["ci"][0] <= paper_value <= m["ci"][1]
    share = answered_note(row, " (")
    share += ")" if share else ""
    return f"{m['value'] - paper_value:+.3f}{' ok' if ok else ''}{share}"


def audit_cell(row: dict[str, Any] | None, eps: float) -> str:
    """One row's PTR audit: its 95% lower bound, the claim (2 eps) and what the audit could
    show on a mechanism exactly at its claim, "refuted" where the bound exceeds the claim."""
    m = (row or {}).get("metrics", {})
    if "eps_audit_lb" not in m:
        # a row without an audit: PTR's certifier did not settle phi cheaply enough
        return "not run" if row is None else "not audited"
    lb, ideal = m["eps_audit_lb"]["value"], m["eps_audit_ideal"]["value"]
    verdict = " **refuted**" if lb > 2 * eps else ""
    return f"{lb:.3g} / {2 * eps:g} / {ideal:.3g}{verdict}"


def short_label(label: str) -> str:
    """ "step 7" for a step of the chain, SHORT's name for a row beside it."""
    return SHORT.get(label, f"step {label.split()[0]}")


def audit_table(boards: dict[str, list[dict[str, Any]]]) -> None:
    """The PTR audit on the rows whose claim is void (the reference-code sensitivity): its
    95% lower bound on the claim's scale, the claim (2 eps), and what the audit could show
    on a mechanism exactly at its claim (its power at that draw count)."""
    print("\n**PTR audit of the not-private rows** (eps_audit_lb / claim 2 eps / could show)\n")
    print("| step | variant | " + " | ".join(f"eps {e:g}" for e in EPS) + " |")
    print("|---|---|" + "---|" * len(EPS))
    for step, group in all_rows():
        label, board, own = group[step]
        if own.get("sensitivity") != "reference-code" or board == SEEDS_BOARD:
            continue
        for variant in VARIANTS:
            if carried(step, variant, group) or absent(boards, step, group, variant):
                continue
            out = [audit_cell(find(boards[board], own, variant, e), e) for e in EPS]
            print(f"| {label} | {variant} | " + " | ".join(out) + " |")


BEGIN, END = "<!-- attribution-table:begin -->", "<!-- attribution-table:end -->"
PAGE = STUDY_DIR / "README.md"


def suite_file(board: str) -> str:
    """The path of the study's suite whose board is `board` (the suites live in the study,
    not in bench's catalogue, so they are found by path)."""
    return str(STUDY_DIR / "suites" / f"{board}.toml")


def block(render: Any = None, begin: str = BEGIN, end: str = END) -> str:
    """The page's block: the markers around the tables `render` (default: main) prints."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        (render or main)()
    return f"{begin}\n{text.getvalue().strip()}\n{end}"


def write(render: Any = None, begin: str = BEGIN, end: str = END) -> None:
    """Replace the block between `begin` and `end` in the study's README (it must hold both
    markers)."""
    page = PAGE.read_text()
    start, stop = page.index(begin), page.index(end) + len(end)
    PAGE.write_text(page[:start] + block(render, begin, end) + page[stop:])


if __name__ == "__main__":
    write() if "--write" in sys.argv[1:] else main()
