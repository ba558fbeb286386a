"""Leaderboards: aggregate job results over seeds into rows, write JSON / CSV / Markdown /
plots atomically and deterministically, and load a leaderboard JSON back with validation.

The JSON is what tools (`bench compare`, CI checks) read; the schema is in DESIGN.md
("Results"). Floats are rounded to 6 significant digits so reruns are byte-identical.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.errors import BenchError
from bench.fsutil import atomic_write
from bench.hashing import canonical_json
from bench.metrics import METRICS, MetricResult
from bench.metrics.stats import aggregate_seeds
from bench.plots_dfil import write_dfil_plots

SentenceExample = tuple[str, list[str], list[str]]  # (row label, originals, reconstructions)
ROW_KEYS = ("task", "mechanism", "params", "guarantee", "attack", "seeds", "metrics")
TOP_KEYS = ("suite", "suite_version", "generated_at", "code_version", "rows")
CSV_COLUMNS = (
    "task",
    "mechanism",
    "params",
    "attack",
    "attack_params",
    "seeds",
    "metric",
    "value",
    "ci_lo",
    "ci_hi",
    "n",
)
ATTACK_METRICS = ("mse", "psnr", "ssim")
COST_METRICS = ("fit_s", "release_ms")
SIG_DIGITS = 6


# --------------------------------------------------------------------------- rows


def round_sig(x: float, digits: int = SIG_DIGITS) -> float:
    """`x` rounded to `digits` significant digits (stable text across reruns)."""
    return float(f"{float(x):.{digits}g}")


def _sorted_obj(obj: Any) -> Any:
    """A copy of nested dicts with keys sorted, so insertion order never leaks into files."""
    if isinstance(obj, dict):
        return {str(k): _sorted_obj(obj[k]) for k in sorted(obj, key=str)}
    if isinstance(obj, list | tuple):
        return [_sorted_obj(v) for v in obj]
    return obj


def _rounded_obj(obj: Any) -> Any:
    """A copy of nested data with every float rounded to SIG_DIGITS significant digits."""
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, float):
        return round_sig(obj)
    if isinstance(obj, dict):
        return {k: _rounded_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_rounded_obj(v) for v in obj]
    return obj


def _guarantee_obj(guarantee: dict[str, Any]) -> dict[str, Any]:
    """The guarantee with "notion" first, the other keys sorted, floats rounded."""
    rest = _sorted_obj({k: v for k, v in guarantee.items() if k != "notion"})
    return _rounded_obj({"notion": guarantee.get("notion", "none"), **rest})


def _group_key(result: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """Rows group jobs that differ only by seed."""
    return (
        result["task"],
        result["mechanism"],
        canonical_json(result.get("params") or {}),
        result.get("attack") or "",
        canonical_json(result.get("attack_params") or {}),
    )


def row_sort_key(row: dict[str, Any]) -> tuple[str, str, str, int, str, str]:
    """Deterministic row order: task, mechanism, params, then utility row before attacks."""
    attack = row.get("attack")
    return (
        row["task"],
        row["mechanism"],
        canonical_json(row.get("params") or {}),
        0 if attack is None else 2 if attack == WORST_CASE else 1,
        attack or "",
        canonical_json(row.get("attack_params") or {}),
    )


def _metric_entry(result: MetricResult) -> dict[str, Any]:
    return {
        "value": round_sig(result.value),
        "ci": [round_sig(result.ci[0]), round_sig(result.ci[1])],
        "n": int(result.n),
    }


def _aggregate_metrics(group: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each metric aggregated over the seeds that report it, keyed by sorted name."""
    per_metric: dict[str, list[MetricResult]] = defaultdict(list)
    for result in group:
        for name, value in result["metrics"].items():
            per_metric[name].append(value)
    return {name: _metric_entry(aggregate_seeds(per_metric[name])) for name in sorted(per_metric)}


def _build_row(group: list[dict[str, Any]]) -> dict[str, Any]:
    group = sorted(group, key=lambda r: r["seed"])
    seeds = [r["seed"] for r in group]
    first = group[0]
    if len(set(seeds)) != len(seeds):
        raise ValueError(
            f"duplicate seeds {seeds} for {first['task']}/{first['mechanism']} "
            f"attack={first.get('attack')}; each job must appear once"
        )
    return {
        "task": first["task"],
        "mechanism": first["mechanism"],
        "params": _sorted_obj(first.get("params") or {}),
        "guarantee": _guarantee_obj(first.get("guarantee") or {"notion": "none"}),
        "attack": first.get("attack"),
        "attack_params": _sorted_obj(first.get("attack_params") or {}),
        "seeds": len(seeds),
        "metrics": _aggregate_metrics(group),
    }


def build_rows(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One leaderboard row per (task, mechanism, params, attack, attack_params), each
    metric aggregated over seeds with `aggregate_seeds`, plus a `worst case` row per
    (task, mechanism, params); rows in a deterministic order."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        groups[_group_key(result)].append(result)
    rows = [_build_row(g) for g in groups.values()]
    rows = rows + worst_case_rows(rows)
    flag_unreliable(rows)
    return sorted(rows, key=row_sort_key)


def flag_unreliable(rows: list[dict[str, Any]]) -> None:
    """Mark every row of a setting whose privacy audit refuted its claim (eps_audit_lb above
    the declared eps at 95% confidence): `unreliable` true with the reason. All numbers here
    are re-executed by bench (`source`), none copied from papers."""
    refuted: dict[tuple[str, str, str], str] = {}
    for row in rows:
        audit = row["metrics"].get("eps_audit_lb")
        claimed = row["guarantee"].get("eps")
        if audit is not None and isinstance(claimed, int | float) and audit["value"] > claimed:
            key = (row["task"], row["mechanism"], canonical_json(row["params"]))
            refuted[key] = (
                f"privacy audit: eps lower bound {audit['value']:.3g} > claimed {claimed:g}"
            )
    for row in rows:
        row["source"] = "re-executed"
        reason = refuted.get((row["task"], row["mechanism"], canonical_json(row["params"])))
        row["unreliable"] = reason is not None
        if reason:
            row["unreliable_reason"] = reason


WORST_CASE = "worst case"


def _strongest(entries: list[tuple[str, dict[str, Any]]], metric: str) -> tuple[str, dict]:
    """The (attack label, entry) most favourable to the attacker for `metric`."""
    if METRICS[metric].better == "higher":  # e.g. mse: the attacker wants it low
        return min(entries, key=lambda e: e[1]["value"])
    return max(entries, key=lambda e: e[1]["value"])


def worst_case_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (task, mechanism, params): each attack metric from the strongest attack for that
    metric (lowest mse, highest ssim / psnr / top1), with `sources` naming the attack."""
    by_config: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["attack"] is not None:
            key = (row["task"], row["mechanism"], canonical_json(row["params"]))
            by_config[key].append(row)
    out = []
    for attack_rows in by_config.values():
        labels = attack_labels(attack_rows)
        metrics, sources = {}, {}
        names = {n for r in attack_rows for n in r["metrics"]}
        for name in sorted(names):
            if name not in METRICS or METRICS[name].kind != "privacy" or name == "eps_audit_lb":
                continue
            entries = [
                (_label_of(r, labels), r["metrics"][name])
                for r in attack_rows
                if name in r["metrics"]
            ]
            sources[name], metrics[name] = _strongest(entries, name)
        first = attack_rows[0]
        out.append(
            {
                "task": first["task"],
                "mechanism": first["mechanism"],
                "params": first["params"],
                "guarantee": first["guarantee"],
                "attack": WORST_CASE,
                "attack_params": {},
                "seeds": min(r["seeds"] for r in attack_rows),
                "metrics": metrics,
                "sources": sources,
            }
        )
    return out


# ----------------------------------------------------------------- atomic writes


def _atomic_write_text(path: Path, text: str) -> Path:
    atomic_write(path, text.encode("utf-8"))
    return path


# ------------------------------------------------------------------------- JSON


def leaderboard_json(
    suite: str, suite_version: str, rows: list[dict[str, Any]], code_version: str, generated_at: str
) -> str:
    """The leaderboard document as indented JSON text (strict: no NaN / inf)."""
    doc = {
        "suite": suite,
        "suite_version": suite_version,
        "generated_at": generated_at,
        "code_version": code_version,
        "rows": rows,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# -------------------------------------------------------------------------- CSV


def _fmt_num(x: float) -> str:
    return f"{x:.{SIG_DIGITS}g}"


def leaderboard_csv(rows: list[dict[str, Any]]) -> str:
    """One line per row x metric, metrics in sorted name order."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        for name in sorted(row["metrics"]):
            m = row["metrics"][name]
            writer.writerow(
                [
                    row["task"],
                    row["mechanism"],
                    canonical_json(row["params"]),
                    row["attack"] or "",
                    canonical_json(row.get("attack_params") or {}),
                    row["seeds"],
                    name,
                    _fmt_num(m["value"]),
                    _fmt_num(m["ci"][0]),
                    _fmt_num(m["ci"][1]),
                    m["n"],
                ]
            )
    return buf.getvalue()


# --------------------------------------------------------------------- Markdown

_NOTION_WORDS = {
    "ldp": "LDP",
    "ip": "IP",
    "reconstruction": "reconstruction privacy",
    "dfil": "dFIL bound",
    "idp": "iDP",
    "dp": "DP",
}
_PARAM_SYMBOLS = {"eps": "ε", "delta": "δ", "radius": "r", "R": "R"}
_PARAM_ORDER = ("eps", "delta", "radius", "R")


def describe_guarantee(guarantee: dict[str, Any]) -> str:
    """A guarantee in words, e.g. "IP (ε=1, δ=1e-05, r=0.1) over l2/input"."""
    notion = guarantee.get("notion", "none")
    if notion in (None, "none"):
        return "none"
    names = [k for k in guarantee if k not in ("notion", "distance") and guarantee[k] is not None]
    names.sort(key=lambda k: (_PARAM_ORDER.index(k) if k in _PARAM_ORDER else len(_PARAM_ORDER), k))
    params = [f"{_PARAM_SYMBOLS.get(k, k)}={_fmt_short(guarantee[k])}" for k in names]
    text = _NOTION_WORDS.get(notion, str(notion))
    if params:
        text += f" ({', '.join(params)})"
    if guarantee.get("distance"):
        text += f" over {guarantee['distance']}"
    return text


def _fmt_short(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _cell(metric: dict[str, Any] | None) -> str:
    """ "value [lo, hi]" with 3 significant digits, or an em dash when absent."""
    if metric is None:
        return "—"
    lo, hi = metric["ci"]
    return f"{metric['value']:.3g} [{lo:.3g}, {hi:.3g}]"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt_short(v)}" for k, v in sorted(params.items()))


def attack_labels(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Column label per (attack, params JSON): the bare name when a task runs the attack with
    one parameter set, else the name plus the parameters that differ, e.g. "map (lam=0.1)"."""
    by_name: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        if _is_attack(r):
            by_name[r["attack"]][canonical_json(r.get("attack_params") or {})] = (
                r.get("attack_params") or {}
            )
    labels = {}
    for name, variants in by_name.items():
        for key, params in variants.items():
            varying = {
                k: v
                for k, v in params.items()
                if any(other.get(k) != v for other in variants.values())
            }
            labels[(name, key)] = f"{name} ({_params_text(varying)})" if varying else name
    return labels


def _label_of(row: dict[str, Any], labels: dict[tuple[str, str], str]) -> str:
    return labels[(row["attack"], canonical_json(row.get("attack_params") or {}))]


def _attack_settings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per attack configuration with all its parameters (for reproduction)."""
    labels = attack_labels(rows)
    seen = {}
    for r in rows:
        if _is_attack(r):
            seen[_label_of(r, labels)] = _params_text(r.get("attack_params") or {})
    return [f"- `{label}`: {text or 'defaults'}" for label, text in sorted(seen.items())]


def utility_metric_of(rows: list[dict[str, Any]]) -> str | None:
    """The task's utility metric as seen in its utility rows: accuracy, else auc, else the
    first other metric of kind "utility" (release_rate is shown separately)."""
    names = {n for r in rows if r["attack"] is None for n in r["metrics"]}
    for name in ("accuracy", "auc"):
        if name in names:
            return name
    others = sorted(
        n for n in names if n in METRICS and METRICS[n].kind == "utility" and n != "release_rate"
    )
    return others[0] if others else None


def _config_key(row: dict[str, Any]) -> tuple[str, str]:
    return row["mechanism"], canonical_json(row["params"])


def _by_config(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows of one task grouped by (mechanism, params), in row order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(_config_key(row), []).append(row)
    return out


def _seed_text(rows: list[dict[str, Any]]) -> str:
    counts = sorted({r["seeds"] for r in rows})
    if len(counts) == 1:
        return f"{counts[0]} seed{'s' if counts[0] != 1 else ''} per row"
    return f"{counts[0]}–{counts[-1]} seeds per row (see the seeds column)"


def _is_attack(row: dict[str, Any]) -> bool:
    """A row of one real attack (not the utility row, not the worst-case summary)."""
    return row["attack"] not in (None, WORST_CASE)


def _worst_case(config_rows: list[dict[str, Any]], metric: str = "mse") -> dict[str, Any] | None:
    """The worst-case row's entry for `metric` (the strongest attack's), or None."""
    worst = next((r for r in config_rows if r["attack"] == WORST_CASE), None)
    return worst["metrics"].get(metric) if worst else None


def _task_table(rows: list[dict[str, Any]], utility: str | None) -> list[str]:
    """Markdown table lines for one task: one line per (mechanism, params)."""
    configs = _by_config(rows)
    labels = attack_labels(rows)
    attacks = sorted({_label_of(r, labels) for r in rows if _is_attack(r)})
    has = {n for r in rows for n in r["metrics"]}
    extra = [n for n in ("release_rate", "eps_audit_lb", "bound_validity") if n in has]
    header = ["mechanism", "params", "guarantee", "seeds"]
    header += [utility] if utility else []
    worst_metrics = [
        m
        for m in ("mse", "ssim", "top1")
        if any(r["attack"] == WORST_CASE and m in r["metrics"] for r in rows)
    ]
    header += [*extra, *(f"worst-case {m}" for m in worst_metrics)]
    header += [f"{a}: {m}" for a in attacks for m in ATTACK_METRICS]
    header += list(COST_METRICS)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (mechanism, params_json), config_rows in configs.items():
        base = next((r for r in config_rows if r["attack"] is None), None)
        by_attack = {_label_of(r, labels): r for r in config_rows if _is_attack(r)}
        base_metrics = base["metrics"] if base else {}
        cells = [
            f"⚠ {mechanism} (unreliable)" if config_rows[0].get("unreliable") else mechanism,
            f"`{params_json}`",
            describe_guarantee(config_rows[0]["guarantee"]),
            str(max(r["seeds"] for r in config_rows)),
        ]
        cells += [_cell(base_metrics.get(utility))] if utility else []
        cells += [_cell(_first_metric(config_rows, n)) for n in extra]
        cells += [_cell(_worst_case(config_rows, m)) for m in worst_metrics]
        for a in attacks:
            metrics = by_attack[a]["metrics"] if a in by_attack else {}
            cells += [_cell(metrics.get(m)) for m in ATTACK_METRICS]
        cells += [_cell(base_metrics.get(n)) for n in COST_METRICS]
        lines.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return lines


def _first_metric(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """`name` from the utility row if it has it, else from the first row that does."""
    ordered = sorted(rows, key=lambda r: r["attack"] is not None)
    return next((r["metrics"][name] for r in ordered if name in r["metrics"]), None)


def leaderboard_markdown(
    suite: str,
    suite_version: str,
    rows: list[dict[str, Any]],
    code_version: str,
    generated_at: str,
    utility_metrics: dict[str, str] | None = None,
    sentences: dict[str, list[SentenceExample]] | None = None,
) -> str:
    """A reviewer-facing view: per task one table of mechanisms with CIs and seed counts,
    and for text tasks a few sentences as each attack reconstructed them (seed 0)."""
    lines = [
        f"# Leaderboard: {suite} (version {suite_version})",
        "",
        f"Generated {generated_at} from code {code_version}. Every cell is the mean over "
        "seeds with a 95% bootstrap confidence interval `value [lo, hi]`. Attack error "
        "(mse) higher = more private; psnr / ssim lower = more private. "
        "Worst case = per metric, the strongest attack's value (lowest mse, highest "
        "ssim / top1); the JSON's worst-case rows name the attack in `sources`. "
        "eps_audit_lb is the privacy audit's 95% lower bound on eps (seed 0); a setting "
        "whose audit refutes its claim is marked ⚠ unreliable. All numbers are re-executed "
        "by bench.",
    ]
    for task, task_rows in _rows_by_task(rows).items():
        utility = (utility_metrics or {}).get(task) or utility_metric_of(task_rows)
        lines += [
            "",
            f"## {task}",
            "",
            f"Utility metric: {utility or 'none'}; {_seed_text(task_rows)}.",
            "",
        ]
        lines += _task_table(task_rows, utility)
        settings = _attack_settings(task_rows)
        if settings:
            lines += ["", "Attack settings:", "", *settings]
        waived = _expected_failure_lines(task_rows)
        if waived:
            lines += ["", "Declared expected failures of `bench validate` checks:", "", *waived]
        lines += _sentence_lines((sentences or {}).get(task, []))
    return "\n".join(lines) + "\n"


def _expected_failure_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per (mechanism, waived check) with its written reason."""
    seen: dict[tuple[str, str], str] = {}
    for row in rows:
        for check, reason in (row.get("expected_failures") or {}).items():
            seen[(row["mechanism"], check)] = reason
    return [f"- `{m}`: `{check}`: {_md_escape(why)}" for (m, check), why in sorted(seen.items())]


def _sentence_lines(examples: list[SentenceExample]) -> list[str]:
    """Markdown: each attack's reconstructions of the first test sentences, under the
    originals (reconstructions of the same sentences in every row)."""
    if not examples:
        return []
    originals = examples[0][1]
    lines = ["", "Reconstructed sentences (seed 0):", ""]
    lines += [f"- original {i + 1}: `{_code_text(s)}`" for i, s in enumerate(originals)]
    for label, _, recovered in examples:
        lines += ["", f"{label}:", ""]
        lines += [f"- {i + 1}: `{_code_text(s)}`" for i, s in enumerate(recovered)]
    return lines


def _code_text(sentence: str) -> str:
    """A sentence safe inside Markdown inline code (no backticks, one line)."""
    return " ".join(sentence.replace("`", "'").split()) or "(empty)"


def _rows_by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=row_sort_key):
        out.setdefault(row["task"], []).append(row)
    return out


# ------------------------------------------------------------------------ plots


def _plot_points(rows: list[dict[str, Any]], utility: str | None) -> list[dict[str, Any]]:
    """One point per (mechanism, params) with a utility value and a worst-case mse > 0."""
    points = []
    for (mechanism, params_json), config_rows in _by_config(rows).items():
        base = next((r for r in config_rows if r["attack"] is None), None)
        worst = _worst_case(config_rows)
        if not (utility and base and worst and utility in base["metrics"]):
            continue
        if worst["value"] <= 0:
            continue
        u = base["metrics"][utility]
        points.append(
            {
                "mechanism": mechanism,
                "params": params_json,
                "mse": worst["value"],
                "utility": u["value"],
                "lo": u["value"] - u["ci"][0],
                "hi": u["ci"][1] - u["value"],
            }
        )
    return points


def privacy_utility_png(task: str, rows: list[dict[str, Any]], utility: str | None) -> bytes:
    """A seaborn scatter of utility (with CI bars) against worst-case attack mse (log x)."""
    import pandas as pd
    import seaborn as sns
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    fig = Figure(figsize=(6.0, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    points = _plot_points(rows, utility)
    if points:
        df = pd.DataFrame(points)
        ax.errorbar(
            df["mse"],
            df["utility"],
            yerr=[df["lo"], df["hi"]],
            fmt="none",
            ecolor="0.5",
            elinewidth=1,
            capsize=3,
            zorder=1,
        )
        sns.scatterplot(data=df, x="mse", y="utility", hue="mechanism", ax=ax, s=50, zorder=2)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels overlap on short ranges
    else:
        ax.text(0.5, 0.5, "no (utility, attack) pairs to plot", ha="center", va="center")
    ax.set_xlabel("worst-case attack MSE (min over attacks; higher = more private)")
    ax.set_ylabel(f"{utility or 'utility'} (95% CI)")
    ax.set_title(f"{task}: privacy-utility")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _as_image(a: np.ndarray) -> np.ndarray:
    """(C, H, W) -> (H, W) greyscale or (H, W, 3) colour, clipped to [0, 1] for display."""
    img = np.clip(a.astype(np.float32), 0.0, 1.0)
    return img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0))


def reconstruction_grid_png(task: str, entries: list[tuple[str, np.ndarray, np.ndarray]]) -> bytes:
    """Originals in the first row, then one row per (mechanism setting, attack): what each
    attack recovers at each privacy level, on the same test images (seed 0)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    originals = entries[0][1]
    cols = len(originals)
    fig = Figure(figsize=(1.0 * cols + 3.2, 1.0 * (len(entries) + 1)), dpi=80)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(entries) + 1, cols, squeeze=False)
    rows = [("original", originals), *((label, x_hat) for label, _, x_hat in entries)]
    for r, (label, images) in enumerate(rows):
        for c in range(cols):
            ax = axes[r][c]
            ax.imshow(_as_image(images[c]), cmap="gray", vmin=0.0, vmax=1.0)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r][0].set_ylabel(label, rotation=0, ha="right", va="center", fontsize=7)
    fig.suptitle(f"{task}: reconstructions (seed 0)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# ------------------------------------------------------------------------ write


def write_leaderboard(
    suite: str,
    suite_version: str,
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    code_version: str,
    generated_at: str | None = None,
    utility_metrics: dict[str, str] | None = None,
    examples: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] | None = None,
    sentences: dict[str, list[SentenceExample]] | None = None,
) -> list[Path]:
    """Write leaderboard.{json,csv,md}, plots/<task>.png and plots/<task>_frontier.png under
    `out_dir`, atomically, plus plots/<task>_reconstructions.png for tasks with `examples`
    (label, x, x_hat), plots/<task>_dfil_bounds.png for tasks whose rows sweep `inv_dfil`
    (bench.plots_dfil), and last index.html, the static page that shows them all. Text tasks'
    reconstructed `sentences` (label, originals, reconstructions) go into the Markdown.

    `generated_at` defaults to now (UTC, ISO 8601); pass it for byte-identical reruns.
    `utility_metrics` maps task -> its utility metric; otherwise it is inferred.
    """
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    stamp = generated_at or datetime.now(UTC).isoformat(timespec="seconds")
    rows = sorted(rows, key=row_sort_key)
    written = [
        _atomic_write_text(
            out_dir / "leaderboard.json",
            leaderboard_json(suite, suite_version, rows, code_version, stamp),
        ),
        _atomic_write_text(out_dir / "leaderboard.csv", leaderboard_csv(rows)),
        _atomic_write_text(
            out_dir / "leaderboard.md",
            leaderboard_markdown(
                suite, suite_version, rows, code_version, stamp, utility_metrics, sentences
            ),
        ),
    ]
    for task, task_rows in _rows_by_task(rows).items():
        utility = (utility_metrics or {}).get(task) or utility_metric_of(task_rows)
        path = out_dir / "plots" / f"{_safe_name(task)}.png"
        atomic_write(path, privacy_utility_png(task, task_rows, utility))
        written.append(path)
    for task, entries in sorted((examples or {}).items()):
        if entries:
            path = out_dir / "plots" / f"{_safe_name(task)}_reconstructions.png"
            atomic_write(path, reconstruction_grid_png(task, entries))
            written.append(path)
    # Attack MSE vs 1/dFIL with the Cramer-Rao and van Trees bounds, for suites sweeping it.
    written += write_dfil_plots(rows, out_dir)
    # The HTML view builds on this module (labels, formatting), hence the local import.
    from bench.leaderboard_html import write_index_html

    doc = json.loads(leaderboard_json(suite, suite_version, rows, code_version, stamp))
    written += write_index_html(out_dir, doc, utility_metrics)
    return written


def _safe_name(task: str) -> str:
    """A task name usable as a file name (path separators replaced)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task)


# ------------------------------------------------------------------------- load


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _metric_problem(m: Any) -> str | None:
    """What is wrong with one metric entry, or None."""
    if not isinstance(m, dict):
        return "must be an object with value, ci, n"
    if not _is_num(m.get("value")):
        return "value must be a finite number"
    ci = m.get("ci")
    if not (isinstance(ci, list) and len(ci) == 2 and all(_is_num(c) for c in ci)):
        return "ci must be [lo, hi] finite numbers"
    n = m.get("n")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        return "n must be a positive integer"
    return None


def _row_problem(row: Any) -> str | None:
    """What is wrong with one row (as "field: problem"), or None."""
    if not isinstance(row, dict):
        return "is not an object"
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        return f"lacks keys {missing}"
    checks = [
        ("task", isinstance(row["task"], str)),
        ("mechanism", isinstance(row["mechanism"], str)),
        ("params", isinstance(row["params"], dict)),
        ("guarantee", isinstance(row["guarantee"], dict) and "notion" in row["guarantee"]),
        ("attack", row["attack"] is None or isinstance(row["attack"], str)),
        ("attack_params", isinstance(row.get("attack_params", {}), dict)),
        (
            "seeds",
            isinstance(row["seeds"], int)
            and not isinstance(row["seeds"], bool)
            and row["seeds"] >= 1,
        ),
        ("metrics", isinstance(row["metrics"], dict)),
    ]
    bad = next((field for field, ok in checks if not ok), None)
    if bad:
        return f"has an invalid {bad!r}"
    for name, m in row["metrics"].items():
        problem = _metric_problem(m)
        if problem:
            return f"metric {name!r}: {problem}"
    return None


def validate_leaderboard(doc: Any, source: str) -> dict[str, Any]:
    """`doc` if it follows the leaderboard schema, else a one-line BenchError naming `source`."""
    if not isinstance(doc, dict):
        raise BenchError(f"leaderboard {source}: top level must be a JSON object")
    missing = [k for k in TOP_KEYS if k not in doc]
    if missing:
        raise BenchError(f"leaderboard {source}: missing top-level keys {missing}")
    bad = [k for k in TOP_KEYS[:4] if not isinstance(doc[k], str)]
    if bad:
        raise BenchError(f"leaderboard {source}: {bad} must be strings")
    if not isinstance(doc["rows"], list):
        raise BenchError(f"leaderboard {source}: 'rows' must be a list")
    for i, row in enumerate(doc["rows"]):
        problem = _row_problem(row)
        if problem:
            raise BenchError(f"leaderboard {source}: rows[{i}] {problem}")
    return doc


def load_leaderboard(path: Path | str) -> dict[str, Any]:
    """Read and validate a leaderboard JSON; any problem is a one-line BenchError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise BenchError(f"cannot read leaderboard {path}: {reason}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(
            f"leaderboard {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    return validate_leaderboard(doc, str(path))


__all__ = [
    "build_rows",
    "describe_guarantee",
    "load_leaderboard",
    "row_sort_key",
    "validate_leaderboard",
    "write_leaderboard",
]
