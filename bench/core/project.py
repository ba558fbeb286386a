"""What counts as this project's own code: the top-level packages whose source files version
a job (bench.run.plan) and key a warm-rerun plan (bench.run.warm). Torch-free, so the plan can
import it without the harness."""

from __future__ import annotations

PROJECT_PACKAGES = ("bench", "mechanisms", "attacks")


def in_project(module_name: str) -> bool:
    """Whether a module belongs to one of the project's packages (not a plug-in's)."""
    return module_name.split(".")[0] in PROJECT_PACKAGES
