"""Export the adult rows of an interrupted lucid-tabular run in which every LUCID-family
mechanism was tuned (tune = true on label-only, lucid, naive-idp, naive-noise): per seed, the
accuracy, the share of the modal prediction and the chosen training configuration.

    python docs/reproductions/lucid-tuning/export.py STORE.sqlite > adult-tuned-family.csv
"""

from __future__ import annotations

import csv
import json
import sqlite3
import sys

FAMILY = ("label-only", "lucid", "naive-idp", "naive-noise", "dp-sgd", "alibi")


def _order(row: tuple) -> tuple:
    return row[1:4]


def main(store: str) -> None:
    conn = sqlite3.connect(store)
    rows = conn.execute(
        "SELECT j.job_hash, j.mechanism, j.params, j.seed, j.guarantee FROM jobs j "
        "WHERE j.task = 'adult' AND j.attack IS NULL"
    ).fetchall()
    out = csv.writer(sys.stdout)
    out.writerow(["mechanism", "eps", "seed", "accuracy", "modal_prediction_share", "lr", "epochs"])
    for job_hash, mechanism, params_json, seed, guarantee_json in sorted(rows, key=_order):
        params = json.loads(params_json)
        if mechanism not in FAMILY or not params.get("tune"):
            continue
        metrics = dict(
            conn.execute("SELECT metric, value FROM results WHERE job_hash = ?", (job_hash,))
        )
        tuning = json.loads(guarantee_json).get("tuning") or {}
        out.writerow(
            [
                mechanism,
                params.get("eps", ""),
                seed,
                f"{metrics['accuracy']:.4f}",
                f"{metrics['modal_prediction_share']:.4f}",
                tuning.get("lr", ""),
                tuning.get("epochs", ""),
            ]
        )


if __name__ == "__main__":
    main(sys.argv[1])
