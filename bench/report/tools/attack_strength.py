"""The attack-strength report (the stronger attack set of 2026-11-25): for every mechanism
setting of a suite that runs the previous and the new image attacks on the same releases,
each attack's SSIM and MSE
with their CIs, which attack is the worst case in each set, and whether the new set moved
the worst case. Read from a committed leaderboard.json, so every number is a committed one.

"Moved" is decided from the committed CIs alone: the new worst case moved when its CI and
the previous worst case's CI are disjoint, and did not move otherwise. Both CIs are over
the same samples and seeds, so this is conservative (a paired test would call more moves).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.labels import (
    attack_labels,
    describe_guarantee,
    short_setting,
    varying_params,
)
from bench.report.board.load import load_leaderboard

# The attack set before the stronger set, identified by the parameters that select the old
# behaviour (the rows also carry the suite's other parameters, e.g. max_steps).
PREVIOUS_SETTINGS: dict[str, dict[str, Any]] = {
    "tv": {"tune_lambda": False},
    "map": {"shrinkage": "fixed"},
    "inverter": {"decoder": "conv"},
}
# Attacks the stronger set left unchanged: members of both sets.
UNCHANGED = frozenset({"optimization"})
# Per metric: how many decimals to print, and whether a higher value is a stronger attack.
METRICS = {"ssim": (3, True), "mse": (4, False)}

DOC_BEGIN = "<!-- attack-strength:begin (written by `bench attack-report --docs`; do not edit) -->"
DOC_END = "<!-- attack-strength:end -->"


def attack_set(row: dict[str, Any]) -> str:
    """Which set an attack row belongs to: "previous", "new" or "both"."""
    name, params = row["attack"], row.get("attack_params") or {}
    if name in UNCHANGED:
        return "both"
    old = PREVIOUS_SETTINGS.get(name)
    if old is not None and all(params.get(k) == v for k, v in old.items()):
        return "previous"
    return "new"


def _setting_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["task"], row["mechanism"], canonical_json(row.get("params") or {})


def _worst(rows: list[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    """The strongest attack on `metric` among `rows` (highest SSIM, lowest MSE)."""
    scored = [r for r in rows if metric in r["metrics"]]
    if not scored:
        return None
    higher = METRICS[metric][1]
    return (max if higher else min)(scored, key=lambda r: r["metrics"][metric]["value"])


def _moved(new: dict[str, Any], old: dict[str, Any], metric: str) -> str:
    """Whether the new worst case is "stronger", "weaker" or "within CI" of the previous."""
    a, b = new["metrics"][metric], old["metrics"][metric]
    if a["ci"][0] > b["ci"][1]:
        above = True
    elif a["ci"][1] < b["ci"][0]:
        above = False
    else:
        return "within CI"
    higher = METRICS[metric][1]
    return "stronger" if above == higher else "weaker"


def strength_report(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per mechanism setting with attack rows: every attack's metrics and set,
    and per metric the worst case of each set and whether it moved."""
    from bench.plugin.families import load_families

    load_families(row["mechanism"] for row in doc["rows"])  # the notions the claims name
    settings: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in doc["rows"]:
        if row.get("attack") in (None, "worst case"):
            continue
        settings.setdefault(_setting_key(row), []).append(row)
    labels = attack_labels([r for rows in settings.values() for r in rows])
    varying = varying_params(
        [(rows[0]["mechanism"], rows[0].get("params") or {}) for rows in settings.values()]
    )

    def label(row: dict[str, Any]) -> str:
        return labels[(row["attack"], canonical_json(row.get("attack_params") or {}))]

    report = []
    for (task, mechanism, _), rows in settings.items():
        entry: dict[str, Any] = {
            "task": task,
            "mechanism": mechanism,
            "params": rows[0].get("params") or {},
            "setting": short_setting(
                mechanism, rows[0].get("params") or {}, varying.get(mechanism, set())
            ),
            "guarantee": describe_guarantee(rows[0].get("guarantee") or {}),
            "attacks": [
                {
                    "attack": label(r),
                    "set": attack_set(r),
                    "metrics": {m: r["metrics"].get(m) for m in METRICS},
                    "tuned": {
                        k: r["metrics"][k]["value"]
                        for k in ("lambda_tv", "prior_shrinkage")
                        if k in r["metrics"]
                    },
                }
                for r in rows
            ],
            "worst": {},
        }
        previous = [r for r in rows if attack_set(r) in ("previous", "both")]
        new = [r for r in rows if attack_set(r) in ("new", "both")]
        for metric in METRICS:
            old_w, new_w = _worst(previous, metric), _worst(new, metric)
            if old_w is None or new_w is None:
                continue
            entry["worst"][metric] = {
                "previous": label(old_w),
                "previous_value": old_w["metrics"][metric],
                "new": label(new_w),
                "new_value": new_w["metrics"][metric],
                "moved": _moved(new_w, old_w, metric),
            }
        report.append(entry)
    return report


def _cell(metric: dict[str, Any] | None, digits: int) -> str:
    if metric is None:
        return "–"
    lo, hi = metric["ci"]
    return f"{metric['value']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _setting_title(entry: dict[str, Any]) -> str:
    return f"{entry['task']} · {entry['setting']}"


def report_markdown(report: list[dict[str, Any]], source: str) -> str:
    """The report as Markdown: a summary table of the worst cases, then per setting every
    attack's SSIM and MSE [95% CI]."""
    lines = [
        f"Source: `{source}` (committed). SSIM: higher is a stronger attack; MSE: lower is. "
        "Each value is the mean over the attacked samples of all seeds (the released ones, "
        "for a mechanism that may abstain), with its 95% CI. "
        "Set: `previous` = the attacks before the stronger set of 2026-11-25 (tv at lambda "
        "0.05, map at shrinkage 0.1, the conv inverter), `new` = the attacks after it, "
        "`both` = unchanged. "
        "Moved: the new worst case's CI lies entirely above (stronger) or below (weaker) the "
        "previous worst case's CI; otherwise within CI.",
        "",
        "| setting | guarantee | SSIM worst: previous | SSIM worst: new | SSIM moved "
        "| MSE worst: previous | MSE worst: new | MSE moved |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in report:
        cells = [_setting_title(entry), entry["guarantee"]]
        for metric, (digits, _) in METRICS.items():
            w = entry["worst"].get(metric)
            if w is None:
                cells += ["–", "–", "–"]
                continue
            cells += [
                f"{w['previous']}: {_cell(w['previous_value'], digits)}",
                f"{w['new']}: {_cell(w['new_value'], digits)}",
                w["moved"],
            ]
        lines.append("| " + " | ".join(cells) + " |")
    for entry in report:
        lines += [
            "",
            f"### {_setting_title(entry)}",
            "",
            "| attack | set | SSIM [95% CI] | MSE [95% CI] | chosen on aux |",
            "|---|---|---|---|---|",
        ]
        order = {"both": 0, "previous": 1, "new": 2}
        for a in sorted(entry["attacks"], key=lambda a: (order[a["set"]], a["attack"])):
            tuned = ", ".join(f"{k} = {v:.4g}" for k, v in a["tuned"].items()) or "–"
            lines.append(
                f"| {a['attack']} | {a['set']} | {_cell(a['metrics']['ssim'], 3)} "
                f"| {_cell(a['metrics']['mse'], 4)} | {tuned} |"
            )
    return "\n".join(lines) + "\n"


def _load_report(board_dir: Path) -> tuple[str, list[dict[str, Any]]]:
    """The committed leaderboard's path as a reader sees it, and its report."""
    source = board_dir / "leaderboard.json"
    return _display(source), strength_report(load_leaderboard(source))


def write_report(board_dir: Path) -> list[Path]:
    """attack-strength.{md,json} beside a suite's committed leaderboard.json."""
    source, report = _load_report(board_dir)
    md = board_dir / "attack-strength.md"
    md.write_text("# Attack strength\n\n" + report_markdown(report, source))
    js = board_dir / "attack-strength.json"
    js.write_text(json.dumps({"source": source, "settings": report}, indent=1) + "\n")
    return [md, js]


def docs_block(board_dir: Path) -> str:
    """The generated block of docs/attacks.md: the report of the committed leaderboard."""
    source, report = _load_report(board_dir)
    body = report_markdown(report, source)
    return f"{DOC_BEGIN}\n\n{body}\n{DOC_END}\n"


def replace_docs_block(text: str, block: str) -> str:
    """`text` with its attack-strength block replaced (appended when it has none)."""
    begin = text.find("<!-- attack-strength:begin")
    if begin < 0:
        return text.rstrip("\n") + "\n\n" + block
    end = text.index(DOC_END, begin) + len(DOC_END)
    return text[:begin] + block.rstrip("\n") + text[end:]


def _display(path: Path) -> str:
    """`path` as the repository-relative text a reader can open."""
    parts = path.resolve().parts
    if "leaderboards" in parts:
        return "/".join(parts[parts.index("leaderboards") :])
    return str(path)
