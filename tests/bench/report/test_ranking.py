"""Ranked views: the most useful settings at each privacy level, never a setting a reader
must not rely on, ties within CI marked."""

from __future__ import annotations

from bench.report.board.ranking import attack_bands, claim_bands, ranked_views


def _line(mech: str, util: tuple[float, float, float], attack: float | None, **claim) -> dict:
    value, lo, hi = util
    return {
        "mechanism": mech,
        "setting": "",
        "all_params": "",
        "guarantee": "",
        "claim": claim or {"notion": "none"},
        "utility": {"value": repr(value), "lo": repr(lo), "hi": repr(hi), "text": "", "ci": ""},
        "attack": None if attack is None else {"value": repr(attack)},
        "at_chance": False,
        "constant": False,
        "alternative_scoring": False,
        "unreliable": False,
        "bound_broken": False,
    }


def _names(band: dict) -> list[tuple[int, str, bool]]:
    return [(e["rank"], e["line"]["mechanism"], e["tied"]) for e in band["entries"]]


def test_settings_are_ranked_by_utility_inside_each_attack_band() -> None:
    lines = [
        _line("a", (0.70, 0.68, 0.72), 0.38, notion="ip", eps=2.0),
        _line("b", (0.66, 0.64, 0.69), 0.37, notion="ip", eps=2.0),  # CI overlaps a's
        _line("c", (0.90, 0.89, 0.91), 0.55, notion="ip", eps=8.0),
        _line("d", (0.30, 0.25, 0.35), 0.15, notion="ip", eps=0.5),
    ]
    bands = {b["label"]: b for b in ranked_views(lines, "ssim", 0.18, True, "SSIM")}
    assert _names(bands["attack SSIM ≤ 0.2"]) == [(1, "d", False)]
    assert _names(bands["attack SSIM ≤ 0.4"]) == [(1, "a", False), (2, "b", True)]
    assert _names(bands["attack SSIM ≤ 0.6"]) == [(1, "c", False), (2, "a", False)]
    # Claimed bands: per notion, its levels strongest first, a level admits stronger claims.
    assert _names(bands["IP ε ≤ 0.5"]) == [(1, "d", False)]
    assert _names(bands["IP ε ≤ 2"]) == [(1, "a", False), (2, "b", True)]


def test_settings_a_reader_must_not_rely_on_are_never_ranked() -> None:
    good = _line("good", (0.6, 0.55, 0.65), 0.3)
    flagged = []
    for flag in ("at_chance", "constant", "alternative_scoring", "unreliable", "bound_broken"):
        line = _line(flag, (0.9, 0.88, 0.92), 0.1)
        line[flag] = True
        flagged.append(line)
    not_private = _line("not_private", (0.95, 0.94, 0.96), 0.1)
    not_private["not_private"] = True
    bands = ranked_views([good, *flagged, not_private], "ssim", 0.18, has_attacks=True)
    assert all(_names(b) == [(1, "good", False)] for b in bands if b["entries"])


def test_mse_bands_are_shares_of_the_prior_guess_and_dfil_ranks_higher_as_stronger() -> None:
    assert [b.label for b in attack_bands("mse", 0.1)] == [
        "attack MSE ≥ 1 × prior guess",
        "attack MSE ≥ 0.75 × prior guess",
        "attack MSE ≥ 0.5 × prior guess",
    ]
    assert attack_bands("mse", None) == []
    lines = [_line(str(v), (0.5, 0.4, 0.6), None, notion="dfil", inv_dfil=v) for v in (1, 10, 100)]
    assert [b.label for b in claim_bands(lines)] == ["1/dFIL ≥ 100", "1/dFIL ≥ 10", "1/dFIL ≥ 1"]


def test_a_single_setting_has_nothing_to_rank() -> None:
    assert ranked_views([_line("only", (0.5, 0.4, 0.6), 0.3)], "ssim", 0.2, True) == []
