"""The membership-inference tables of docs/lucid.md, written from the committed boards.

Run `python docs/scripts/membership_tables.py` to print the block that docs/lucid.md holds
between `<!-- membership-tables:begin -->` and `<!-- membership-tables:end -->`, or with
`--write` to replace that block; tests/docs/test_membership_doc.py checks the page against it, so
the page's numbers are always those of the committed boards.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from bench.report.board.load import load_leaderboard

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "lucid.md"
BEGIN, END = "<!-- membership-tables:begin -->", "<!-- membership-tables:end -->"
# (board, task, what the task's paragraph calls it)
BOARDS = (
    ("lucid-adult", "adult", "adult, 1,000 training records"),
    ("lucid-tabular", "adult", "adult, 200 training records"),
    ("lucid-tabular", "german", "german, 200 training records"),
    ("lucid-tabular", "credit", "credit, 200 training records"),
    ("lucid-tabular", "spam", "spam, 200 training records"),
    ("default", "spam", "spam, 200 training records (the default suite: track-tabular's, seed 0)"),
)
ORDER = ("label-only", "lucid", "naive-idp", "naive-noise", "dp-sgd", "alibi")
ATTACKS = ("mia-gap", "mia-boundary", "mia-loo")
WORST = "worst case"


def _rows(board: str) -> list[dict[str, Any]]:
    return load_leaderboard(ROOT / "leaderboards" / board / "leaderboard.json")["rows"]


def _num(x: float) -> str:
    return f"{x:.3g}"


def _ci(metric: dict[str, Any]) -> str:
    lo, hi = metric["ci"]
    return f"{_num(metric['value'])} [{_num(lo)}, {_num(hi)}]"


def _setting(row: dict[str, Any]) -> str:
    eps = row["params"].get("eps")
    name = row["mechanism"] if eps is None else f"{row['mechanism']} eps {eps:g}"
    return name + (" (tuned)" if row["params"].get("tune") else "")


def _sort_key(row: dict[str, Any]) -> tuple[int, float]:
    return ORDER.index(row["mechanism"]), float(row["params"].get("eps") or 0.0)


def _key(row: dict[str, Any]) -> str:
    """A setting's identity on a board: its mechanism and parameters."""
    return row["mechanism"] + json.dumps(row["params"], sort_keys=True)


def _flag(row: dict[str, Any]) -> str:
    """The page's short word for a row the board marks: unreliable, or a constant predictor."""
    if row.get("unreliable"):
        return "**unreliable**"
    return "constant predictor" if row.get("constant_predictor") else ""


def setting_table(rows: list[dict[str, Any]], task: str) -> list[str]:
    """One line per setting: accuracy, the strongest attack by AUC and by TPR at 1% FPR (the
    board's worst-case row; its attack in brackets), the claim's TPR ceiling, the flag."""
    utility = {_key(r): r for r in rows if r["task"] == task and r["attack"] is None}
    lines = [
        "| setting | accuracy | strongest AUC [95% CI] | strongest TPR at 1% FPR [95% CI] "
        "| TPR ceiling | flag |",
        "|---|---|---|---|---|---|",
    ]
    worst = [r for r in rows if r["task"] == task and r["attack"] == WORST]
    for row in sorted(worst, key=_sort_key):
        base = utility[_key(row)]
        m, sources = row["metrics"], row.get("sources", {})
        auc = f"{_ci(m['mia_auc'])} ({sources.get('mia_auc', '?')})"
        tpr_metric = m.get("mia_tpr_at_1pct_fpr")
        tpr = (
            f"{_ci(tpr_metric)} ({sources.get('mia_tpr_at_1pct_fpr', '?')})"
            if tpr_metric
            else "not reported (fewer than 100 non-members per seed)"
        )
        ceilings = [
            r["metrics"]["mia_ceiling_1pct_fpr"]["value"]
            for r in rows
            if r["task"] == task
            and r["attack"] in ATTACKS
            and _key(r) == _key(row)
            and "mia_ceiling_1pct_fpr" in r["metrics"]
        ]
        ceiling = _num(ceilings[0]) if ceilings else "none claimed" if tpr_metric else ""
        flag = _flag(base) or _flag(row)
        lines.append(
            f"| {_setting(row)} | {_num(base['metrics']['accuracy']['value'])} | {auc} | {tpr} "
            f"| {ceiling} | {flag} |"
        )
    return lines


def prior_line_table(boards: list[tuple[str, str, list[dict[str, Any]]]]) -> list[str]:
    """Every attack's AUC on the rows that carry no membership signal by construction:
    naive-noise at eps 0 (every answer uniform) and constant predictors."""
    lines = [
        "| board / task | setting | " + " | ".join(f"{a} AUC [95% CI]" for a in ATTACKS) + " |",
        "|---|---|" + "---|" * len(ATTACKS),
    ]
    for board, task, rows in boards:
        blind = [
            r
            for r in rows
            if r["task"] == task
            and r["attack"] is None
            and (
                (r["mechanism"] == "naive-noise" and r["params"].get("eps") == 0.0)
                or r.get("constant_predictor")
            )
        ]
        for base in sorted(blind, key=_sort_key):
            cells = []
            for attack in ATTACKS:
                found = [
                    r
                    for r in rows
                    if r["task"] == task and r["attack"] == attack and _key(r) == _key(base)
                ]
                cells.append(_ci(found[0]["metrics"]["mia_auc"]) if found else "")
            why = "every answer uniform" if base["mechanism"] == "naive-noise" else "one class"
            setting = f"{_setting(base)}: {why}"
            lines.append(f"| {board} / {task} | {setting} | {' | '.join(cells)} |")
    return lines


def block() -> str:
    """The page's block: the prior-line controls, then one table per board and task."""
    loaded = {board: _rows(board) for board in {b for b, _, _ in BOARDS}}
    out = [
        BEGIN,
        "",
        "**The prior line.** Rows whose answers carry no membership signal by construction, "
        "every attack's AUC:",
        "",
        *prior_line_table([(b, t, loaded[b]) for b, t, _ in BOARDS]),
    ]
    for board, task, title in BOARDS:
        out += ["", f"**{title}** (`leaderboards/{board}/`):", ""]
        out += setting_table(loaded[board], task)
    out += ["", END]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the block in lucid.md")
    args = parser.parse_args()
    text = block()
    if not args.write:
        print(text)
        return
    page = PAGE.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise SystemExit(f"{PAGE}: no {BEGIN} ... {END} block to replace")
    PAGE.write_text(pattern.sub(lambda _: text, page))


if __name__ == "__main__":
    main()
