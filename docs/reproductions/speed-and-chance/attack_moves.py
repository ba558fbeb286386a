"""For each attack, how its rows moved between two leaderboard.json files: MSE down / SSIM
(or top-1) up = stronger. Rows matched on (task, mechanism, params, attack name)."""
import json, sys
def load(path):
    out = {}
    for r in json.load(open(path))["rows"]:
        if r["attack"] and r["attack"] != "worst case":
            out[(r["task"], r["mechanism"], json.dumps(r["params"], sort_keys=True), r["attack"])] = r["metrics"]
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
    print(f"{attack:12s} {len(moved)} rows moved: MSE lower on {stronger}, SSIM higher on {ssim_up} of {len(ssim)};"
          f" new/old MSE median {ratios[len(ratios)//2]:.3f}, range [{ratios[0]:.3g}, {ratios[-1]:.3g}]")
    for k in moved:
        if new[k]["mse"]["value"] > old[k]["mse"]["value"]:
            print("   weaker:", k[0], k[1], k[2][:60], round(old[k]["mse"]["value"], 5), "->", round(new[k]["mse"]["value"], 5))
