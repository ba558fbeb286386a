"""For each attack, how its rows moved between two leaderboard.json files: MSE down / SSIM
up = stronger. Rows matched on (task, mechanism, params, attack name).
Usage: python attack_moves.py OLD.json NEW.json"""

import json
import sys
from pathlib import Path


def load(path: str) -> dict[tuple, dict]:
    out = {}
    for r in json.loads(Path(path).read_text())["rows"]:
        if r["attack"] and r["attack"] != "worst case":
            key = (r["task"], r["mechanism"], json.dumps(r["params"], sort_keys=True), r["attack"])
            out[key] = r["metrics"]
    return out


old, new = load(sys.argv[1]), load(sys.argv[2])
for attack in sorted({k[3] for k in old}):
    keys = [k for k in old if k[3] == attack and k in new and "mse" in old[k]]
    moved = [k for k in keys if old[k]["mse"]["value"] != new[k]["mse"]["value"]]
    if not moved:
        continue
    stronger = sum(new[k]["mse"]["value"] < old[k]["mse"]["value"] for k in moved)
    ratios = sorted(new[k]["mse"]["value"] / max(old[k]["mse"]["value"], 1e-300) for k in moved)
    ssim = [k for k in moved if "ssim" in old[k]]
    ssim_up = sum(new[k]["ssim"]["value"] > old[k]["ssim"]["value"] for k in ssim)
    print(
        f"{attack:12s} {len(moved)} rows moved: MSE lower on {stronger}, SSIM higher on "
        f"{ssim_up} of {len(ssim)}; new/old MSE median {ratios[len(ratios) // 2]:.3f}, "
        f"range [{ratios[0]:.3g}, {ratios[-1]:.3g}]"
    )
    for k in moved:
        before, after = old[k]["mse"]["value"], new[k]["mse"]["value"]
        if after > before:
            print("   weaker:", k[0], k[1], k[2][:60], round(before, 5), "->", round(after, 5))
