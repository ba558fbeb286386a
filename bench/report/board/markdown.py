"""The Markdown leaderboard: per task, one table line per (mechanism, params) with utility
and the strongest attack, attack settings, waived checks and reconstructed sentences."""

from __future__ import annotations

from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.heading import board_heading
from bench.report.board.labels import (
    COST_METRICS,
    MIA_METRICS,
    WORST_CASE,
    attack_label_of,
    attack_labels,
    attack_metrics_of,
    by_config,
    describe_guarantee,
    is_attack,
    params_text,
    rows_by_task,
    task_chance,
    utility_metric_of,
    worst_case_entry,
)

SentenceExample = tuple[str, list[str], list[str]]  # (row label, originals, reconstructions)


def _cell(metric: dict[str, Any] | None) -> str:
    """ "value [lo, hi]" with 3 significant digits, or an em dash when absent."""
    if metric is None:
        return "—"
    lo, hi = metric["ci"]
    return f"{metric['value']:.3g} [{lo:.3g}, {hi:.3g}]"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _attack_settings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per attack configuration with all its parameters (for reproduction)."""
    labels = attack_labels(rows)
    seen = {}
    for r in rows:
        if is_attack(r):
            seen[attack_label_of(r, labels)] = params_text(r.get("attack_params") or {})
    return [f"- `{label}`: {text or 'defaults'}" for label, text in sorted(seen.items())]


def _seed_text(rows: list[dict[str, Any]]) -> str:
    counts = sorted({r["seeds"] for r in rows})
    if len(counts) == 1:
        return f"{counts[0]} seed{'s' if counts[0] != 1 else ''} per row"
    return f"{counts[0]}–{counts[-1]} seeds per row (see the seeds column)"


def _task_table(rows: list[dict[str, Any]], utility: str | None) -> list[str]:
    """Markdown table lines for one task: one line per (mechanism, params)."""
    configs = by_config(rows)
    labels = attack_labels(rows)
    attacks = sorted({attack_label_of(r, labels) for r in rows if is_attack(r)})
    has = {n for r in rows for n in r["metrics"]}
    audit = ("eps_audit_lb", "eps_audit_ideal", "audit_draws")
    # posthoc-ptr's proposal inputs (local Lipschitz constant, DeltaP): paper Fig. 3's quantity.
    proposal = ("local_lipschitz", "delta_p")
    extra = [n for n in ("release_rate", *audit, "bound_validity", *proposal) if n in has]
    header = ["mechanism", "params", "guarantee", "seeds"]
    header += [utility] if utility else []
    per_attack = attack_metrics_of(rows)
    ceiling = "mia_ceiling_1pct_fpr"
    extra += [ceiling] if any(is_attack(r) and ceiling in r["metrics"] for r in rows) else []
    worst_metrics = [
        m
        for m in ("mse", "ssim", "top1", *MIA_METRICS)
        if any(r["attack"] == WORST_CASE and m in r["metrics"] for r in rows)
    ]
    header += [*extra, *(f"worst-case {m}" for m in worst_metrics)]
    header += [f"{a}: {m}" for a in attacks for m in per_attack]
    header += list(COST_METRICS)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (mechanism, params_json), config_rows in configs.items():
        base = next((r for r in config_rows if r["attack"] is None), None)
        by_attack = {attack_label_of(r, labels): r for r in config_rows if is_attack(r)}
        base_metrics = base["metrics"] if base else {}
        cells = [
            f"⚠ {mechanism} (unreliable)" if config_rows[0].get("unreliable") else mechanism,
            f"`{params_json}`",
            describe_guarantee(config_rows[0]["guarantee"]),
            str(max(r["seeds"] for r in config_rows)),
        ]
        if utility:
            flags = [
                flag
                for key, flag in (("at_chance", "at chance"), ("constant_predictor", "constant"))
                if base and base.get(key)
            ]
            note = f" ({', '.join(flags)})" if flags else ""
            cells += [_cell(base_metrics.get(utility)) + note]
        cells += [_cell(_first_metric(config_rows, n)) for n in extra]
        cells += [_cell(worst_case_entry(config_rows, m)) for m in worst_metrics]
        for a in attacks:
            metrics = by_attack[a]["metrics"] if a in by_attack else {}
            cells += [_cell(metrics.get(m)) for m in per_attack]
        cells += [_cell(base_metrics.get(n)) for n in COST_METRICS]
        lines.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return lines


def _chance_reason_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per at-chance utility row that carries a computed reason."""
    return [
        f"- {r['mechanism']} `{canonical_json(r['params'])}`: {r['at_chance_reason']}"
        for r in rows
        if r["attack"] is None and r.get("at_chance_reason")
    ]


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
    kind: str | None = None,
) -> str:
    """A reviewer-facing view, led by the board's title, kind and suite description
    (bench.report.board.heading): per task one table of mechanisms with CIs and seed counts,
    and for text tasks a few sentences as each attack reconstructed them (seed 0)."""
    heading = board_heading({"suite": suite, "rows": rows, "kind": kind})
    papers = " and ".join(
        f"[{p.title}]({p.url})" + (f" ({p.year})" if p.year else "") for p in heading.papers
    )
    kind_line = heading.kind_line
    if papers and heading.kind == "paper":
        kind_line = f"Reproduces {papers}: {kind_line}"
    lines = [
        f"# {heading.title}",
        "",
        f"**{heading.kind_words}.** {kind_line}",
        *(
            ["", heading.lead + (f" {heading.rest}" if heading.rest else "")]
            if heading.lead
            else []
        ),
        "",
        f"Suite {suite}, version {suite_version}. "
        f"Generated {generated_at} from code {code_version}. Every cell is the mean over "
        "seeds with a 95% bootstrap confidence interval `value [lo, hi]`. Attack error "
        "(mse) higher = more private; psnr / ssim lower = more private. "
        "Worst case = per metric, the strongest attack's value (lowest mse, highest "
        "ssim / top1); the JSON's worst-case rows name the attack in `sources`. "
        "eps_audit_lb is the privacy audit's 95% lower bound on eps (seed 0), from "
        "audit_draws releases per input; eps_audit_ideal is the bound the same audit gets on "
        "a mechanism exactly at its claim, so an eps_audit_lb near it means the audit had "
        "power and one far below the claim means it could not have failed "
        "(docs/submitting.md); a setting whose audit refutes its claim is marked ⚠ "
        "unreliable. All numbers are re-executed by bench.",
    ]
    for task, task_rows in rows_by_task(rows).items():
        utility = (utility_metrics or {}).get(task) or utility_metric_of(task_rows)
        chance = task_chance(task_rows)
        lines += [
            "",
            f"## {task}",
            "",
            f"Utility metric: {utility or 'none'}"
            + (f" (chance: {chance:.4g}, the best constant predictor)" if chance else "")
            + f"; {_seed_text(task_rows)}.",
            "",
        ]
        lines += _task_table(task_rows, utility)
        settings = _attack_settings(task_rows)
        if settings:
            lines += ["", "Attack settings:", "", *settings]
        tuned = _tuning_lines(task_rows)
        if tuned:
            lines += [
                "",
                "Training configurations chosen on public data (the same grid for every "
                "method, by accuracy on the aux validation split; seed by seed):",
                "",
                *tuned,
            ]
        reasons = _chance_reason_lines(task_rows)
        if reasons:
            lines += ["", "Why rows are at chance (from the task's unprotected row):", "", *reasons]
        bounds = _bound_lines(task_rows)
        if bounds:
            lines += [
                "",
                "Bounds checked against each attack (theorem: binds this attack by a stated "
                "theorem, so its validity must be 1.0; estimate: rests on an estimated quantity "
                "or on an assumption the attack need not meet):",
                "",
                *bounds,
            ]
        waived = _expected_failure_lines(task_rows)
        if waived:
            lines += ["", "Declared expected failures of `bench validate` checks:", "", *waived]
        lines += _sentence_lines((sentences or {}).get(task, []))
    return "\n".join(lines) + "\n"


def _tuning_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per utility row whose model was tuned: the chosen lr and epochs."""
    out = []
    for r in rows:
        choices = (r.get("guarantee") or {}).get("tuning")
        if r["attack"] is None and choices:
            per_seed = "; ".join(
                f"lr {c['lr']:g}, {c['epochs']:g} epochs (validation {c['val_accuracy']:.3g})"
                for c in choices
                if c
            )
            out.append(f"- {r['mechanism']} `{canonical_json(r['params'])}`: {per_seed}")
    return out


def _bound_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A table row per attack row with a bound check: the bound, its basis, why, its value
    and how often it held."""
    checked = [r for r in rows if is_attack(r) and r.get("bound_basis")]
    if not checked:
        return []
    labels = attack_labels(rows)
    lines = [
        "| mechanism | params | attack | bound | basis | bound_mse | bound_validity | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in checked:
        bound = r["guarantee"]["bound"]
        cells = [
            r["mechanism"],
            f"`{canonical_json(r['params'])}`",
            attack_label_of(r, labels),
            bound["bound"],
            bound["basis"],
            _cell(r["metrics"].get("bound_mse")),
            _cell(r["metrics"].get("bound_validity")),
            bound["why"],
        ]
        lines.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return lines


def _expected_failure_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per (mechanism, waived check) with its written reason."""
    seen: dict[tuple[str, str], str] = {}
    for row in rows:
        for check, reason in (row.get("expected_failures") or {}).items():
            seen[(row["mechanism"], check)] = reason
    return [f"- `{m}`: `{check}`: {_md_escape(why)}" for (m, check), why in sorted(seen.items())]


SENTENCES_HEADING = "Reconstructed sentences (seed 0):"


def _sentence_lines(examples: list[SentenceExample]) -> list[str]:
    """Markdown: each attack's reconstructions of the first test sentences, under the
    originals (reconstructions of the same sentences in every row)."""
    if not examples:
        return []
    originals = examples[0][1]
    lines = ["", SENTENCES_HEADING, ""]
    lines += [f"- original {i + 1}: `{_code_text(s)}`" for i, s in enumerate(originals)]
    for label, _, recovered in examples:
        lines += ["", f"{label}:", ""]
        lines += [f"- {i + 1}: `{_code_text(s)}`" for i, s in enumerate(recovered)]
    return lines


def _code_text(sentence: str) -> str:
    """A sentence safe inside Markdown inline code (no backticks, one line)."""
    return " ".join(sentence.replace("`", "'").split()) or "(empty)"
