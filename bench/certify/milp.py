"""A small mixed-integer linear programming layer over HiGHS (always) and Gurobi (optional).

Why: guarantees built on an optimisation (local Lipschitz constants for Posthoc PTR, the
LUCID decision bounds) must rest on the solver's CERTIFIED bound, i.e. the dual bound of
branch and bound, never on its incumbent. Every `MILPResult` carries both, with the gap,
the status and the solver that produced them, so callers cannot confuse the two.

Models are built backend-free (bounded variables, binaries, two-sided linear rows, a linear
objective) and solved by `solve(...)` with a time limit and, optionally, a decision
threshold: the solve stops as soon as the sign of (optimum - threshold) is certified.

The solver is named, never picked by what is installed: HiGHS by default, Gurobi when a
caller asks for it. A budgeted solve (node or time limit, decision threshold) stops where
its solver's search happens to be, so the same model can give a different certified bound
under the other solver (docs/performance.md measured PTR decisions that differ); a job's
numbers must not depend on whether gurobipy is on the machine. Gurobi's pip licence is
size-limited (about 2,000 variables / constraints): a licence error makes a Gurobi solve
fall back to HiGHS, with one warning per process, and the result's `solver` says so.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from scipy import sparse

from bench.core.errors import ConfigError

Sense = Literal["max", "min"]
Status = Literal[
    "optimal", "time_limit", "node_limit", "decided", "infeasible", "unbounded", "error"
]
SOLVERS = ("highs", "gurobi")
_GUROBI_NOTE = {"warned": False}


@dataclass(frozen=True)
class MILPResult:
    """Outcome of one solve.

    `bound` is the certified bound on the optimum (an upper bound for a maximisation, a
    lower bound for a minimisation; +-inf when the solver proved nothing); `incumbent` is
    the best feasible objective found (None if none), `solution` its variable values.
    `status` "decided" means the solve stopped early because the threshold was settled;
    "time_limit" / "node_limit" that a budget ran out first (bound and incumbent stay valid).
    """

    status: Status
    bound: float
    incumbent: float | None
    solution: np.ndarray | None
    gap: float
    solver: str
    seconds: float
    nodes: int = 0

    @property
    def solved(self) -> bool:
        """True when the bound and the incumbent agree to the solver's gap tolerance."""
        return self.status == "optimal"


@dataclass
class MILP:
    """A backend-free MILP: bounded continuous / binary variables, rows lo <= a.x <= hi."""

    sense: Sense = "max"
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    _rows: list[np.ndarray] = field(default_factory=list)
    _cols: list[np.ndarray] = field(default_factory=list)
    _vals: list[np.ndarray] = field(default_factory=list)
    row_lo: list[float] = field(default_factory=list)
    row_hi: list[float] = field(default_factory=list)
    objective: dict[int, float] = field(default_factory=dict)
    offset: float = 0.0

    def __post_init__(self) -> None:
        if self.sense not in ("max", "min"):
            raise ConfigError(f"MILP sense must be 'max' or 'min', got {self.sense!r}")

    @property
    def num_vars(self) -> int:
        return len(self.lb)

    @property
    def num_rows(self) -> int:
        return len(self.row_lo)

    @property
    def num_binaries(self) -> int:
        return sum(self.integer)

    def add_vars(
        self,
        lb: np.ndarray | float,
        ub: np.ndarray | float,
        n: int | None = None,
        binary: bool = False,
    ) -> np.ndarray:
        """Add variables with bounds [lb, ub] (binaries: [0, 1]); returns their indices."""
        if binary:
            lo_arr, hi_arr = np.zeros(n or 1), np.ones(n or 1)
        else:
            lo_arr = np.atleast_1d(np.asarray(lb, dtype=np.float64))
            hi_arr = np.atleast_1d(np.asarray(ub, dtype=np.float64))
            size = n or max(len(lo_arr), len(hi_arr))
            lo_arr, hi_arr = np.broadcast_to(lo_arr, size), np.broadcast_to(hi_arr, size)
        if np.any(lo_arr > hi_arr) or np.any(np.isnan(lo_arr)) or np.any(np.isnan(hi_arr)):
            raise ConfigError("MILP variable bounds must satisfy lb <= ub (no NaN)")
        start = self.num_vars
        self.lb.extend(lo_arr.tolist())
        self.ub.extend(hi_arr.tolist())
        self.integer.extend([binary] * len(lo_arr))
        return np.arange(start, self.num_vars)

    def add_row(
        self,
        idx: np.ndarray | list[int],
        coef: np.ndarray | list[float],
        lo: float = -math.inf,
        hi: float = math.inf,
    ) -> None:
        """Add the constraint lo <= sum_j coef_j x_idx_j <= hi (duplicate indices are summed)."""
        idx_arr = np.asarray(idx, dtype=np.int64)
        coef_arr = np.asarray(coef, dtype=np.float64)
        if idx_arr.shape != coef_arr.shape:
            raise ConfigError("MILP row: indices and coefficients differ in length")
        keep = coef_arr != 0
        self._rows.append(np.full(int(keep.sum()), self.num_rows, dtype=np.int64))
        self._cols.append(idx_arr[keep])
        self._vals.append(coef_arr[keep])
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))

    def set_objective(
        self, idx: np.ndarray | list[int], coef: np.ndarray | list[float], offset: float = 0.0
    ) -> None:
        """Objective sum_j coef_j x_idx_j + offset, maximised or minimised per `sense`."""
        self.objective = {}
        for i, c in zip(
            np.asarray(idx).tolist(), np.asarray(coef, dtype=float).tolist(), strict=True
        ):
            self.objective[i] = self.objective.get(i, 0.0) + c
        self.offset = float(offset)

    def matrix(self) -> sparse.csr_matrix:
        """The constraint matrix (rows x variables)."""
        if not self._rows:
            return sparse.csr_matrix((0, self.num_vars))
        r, c, v = (np.concatenate(a) for a in (self._rows, self._cols, self._vals))
        return sparse.csr_matrix((v, (r, c)), shape=(self.num_rows, self.num_vars))

    def cost(self) -> np.ndarray:
        c = np.zeros(self.num_vars)
        for i, v in self.objective.items():
            c[i] = v
        return c

    def solve(
        self,
        *,
        time_limit: float | None = None,
        solver: str = "highs",
        threshold: float | None = None,
        threads: int = 1,
        rel_gap: float = 1e-6,
        node_limit: int | None = None,
    ) -> MILPResult:
        """Solve; with `threshold`, stop once optimum <= / > threshold is certified (max
        sense: bound <= threshold, or incumbent > threshold; mirrored for min).

        `node_limit` caps branch-and-bound nodes: unlike a time limit, the outcome is then
        the same on every machine (one thread, fixed seed), so results are reproducible."""
        check_solver(solver, "MILP")
        if time_limit is not None and not time_limit > 0:
            raise ConfigError(f"MILP time limit must be positive, got {time_limit}")
        if node_limit is not None and not node_limit >= 1:
            raise ConfigError(f"MILP node limit must be a positive integer, got {node_limit}")
        limits = _Limits(time_limit, node_limit, threshold, threads, rel_gap)
        if solver == "gurobi" and gurobi_available():
            result = _solve_gurobi(self, limits)
            if result is not None:
                return result
            _note_gurobi_fallback()
        elif solver == "gurobi":
            raise ConfigError(
                "solver 'gurobi' requested but gurobipy is not installed "
                "(pip install 'bench-privacy[gurobi]'); or use solver 'highs'"
            )
        return _solve_highs(self, limits)


@dataclass(frozen=True)
class _Limits:
    """What bounds one solve: budgets, the decision threshold and solver settings."""

    time_limit: float | None
    node_limit: int | None
    threshold: float | None
    threads: int
    rel_gap: float


def settled(sense: Sense, bound: float, incumbent: float | None, threshold: float) -> bool:
    """Whether (optimum vs threshold) is certified by this bound / incumbent."""
    if sense == "max":
        return bound <= threshold or (incumbent is not None and incumbent > threshold)
    return bound >= threshold or (incumbent is not None and incumbent < threshold)


def check_solver(solver: str, owner: str) -> None:
    """Refuse a solver name outside SOLVERS, with a one-line reason (`owner` names who asked)."""
    if solver in SOLVERS:
        return
    why = (
        " ('auto' is not one: Gurobi wherever gurobipy imports would give the same job"
        " other numbers on other machines)"
        if solver == "auto"
        else ""
    )
    raise ConfigError(f"{owner}: solver must be one of {', '.join(SOLVERS)}, got {solver!r}{why}")


def gurobi_available() -> bool:
    """True if gurobipy imports (its licence is only checked when a model is solved)."""
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return False
    return True


def _note_gurobi_fallback() -> None:
    if not _GUROBI_NOTE["warned"]:
        _GUROBI_NOTE["warned"] = True
        warnings.warn(
            "gurobipy's licence does not admit this model (the pip licence is size-limited); "
            "falling back to HiGHS for models this large",
            RuntimeWarning,
            stacklevel=3,
        )


def _solve_highs(m: MILP, limits: _Limits) -> MILPResult:
    import highspy

    time_limit, threshold = limits.time_limit, limits.threshold

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(limits.threads))
    h.setOptionValue("mip_rel_gap", limits.rel_gap)
    h.setOptionValue("random_seed", 0)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if limits.node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(limits.node_limit))
    h.passModel(_highs_model(m, relaxed=False))
    stopped = {"flag": False}
    if threshold is not None:

        def interrupt(event: object) -> None:
            out = event.data_out  # type: ignore[attr-defined]
            inc = out.mip_primal_bound
            inc = inc if math.isfinite(inc) else None
            if settled(m.sense, out.mip_dual_bound, inc, threshold):
                stopped["flag"] = True
                event.interrupt()  # type: ignore[attr-defined]

        h.cbMipInterrupt.subscribe(interrupt)
        h.cbMipImprovingSolution.subscribe(interrupt)
    start = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    ms = highspy.HighsModelStatus
    if status == ms.kInfeasible:
        return MILPResult(
            "infeasible",
            -math.inf if m.sense == "max" else math.inf,
            None,
            None,
            0.0,
            "highs",
            seconds,
        )
    if status in (ms.kUnbounded, ms.kUnboundedOrInfeasible):
        return MILPResult(
            "unbounded",
            math.inf if m.sense == "max" else -math.inf,
            None,
            None,
            math.inf,
            "highs",
            seconds,
        )
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    incumbent = float(info.objective_function_value) if has_sol else None
    solution = np.asarray(h.getSolution().col_value) if has_sol else None
    if m.num_binaries == 0 and status == ms.kOptimal:
        bound = float(info.objective_function_value)  # a pure LP: optimal objective is exact
    else:
        bound = float(info.mip_dual_bound)
    if status == ms.kOptimal:
        st: Status = "optimal"
        if m.sense == "max":  # the dual bound of a solved MIP may sit a hair below the optimum
            bound = max(bound, incumbent) if incumbent is not None else bound
        else:
            bound = min(bound, incumbent) if incumbent is not None else bound
    elif stopped["flag"] or status == ms.kInterrupt:
        st = "decided"
    elif status == ms.kTimeLimit:
        st = "time_limit"
    elif status == ms.kSolutionLimit and limits.node_limit is not None:
        st = "node_limit"  # HiGHS reports mip_max_nodes exhaustion as a solution limit
    else:
        st = "error"
        bound = math.inf if m.sense == "max" else -math.inf
    if not math.isfinite(bound):
        bound = math.inf if m.sense == "max" else -math.inf
    gap = _gap(bound, incumbent)
    return MILPResult(
        st, bound, incumbent, solution, gap, "highs", seconds, int(info.mip_node_count)
    )


def _highs_model(m: MILP, *, relaxed: bool) -> object:
    """`m` as a HiGHS model; `relaxed` drops integrality (the LP relaxation)."""
    import highspy

    a = m.matrix().tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = m.num_vars, m.num_rows
    lp.col_cost_ = m.cost()
    lp.offset_ = m.offset
    lp.col_lower_, lp.col_upper_ = np.asarray(m.lb), np.asarray(m.ub)
    lp.row_lower_, lp.row_upper_ = np.asarray(m.row_lo), np.asarray(m.row_hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr
    lp.a_matrix_.index_ = a.indices
    lp.a_matrix_.value_ = a.data
    if not relaxed:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
            for b in m.integer
        ]
    lp.sense_ = highspy.ObjSense.kMaximize if m.sense == "max" else highspy.ObjSense.kMinimize
    return lp


LP_SLACK = 1e-6  # relative outward slack on an LP optimum (the solver's feasibility tolerance)


class LinearRelaxation:
    """The LP relaxation of a MILP, kept in one HiGHS instance and re-solved for many linear
    objectives (each solve warm-starts from the previous basis): bound tightening asks for
    hundreds of optima over the same constraints.

    An LP optimum is certified by its dual solution, so `optimum` is a sound bound on every
    point of the MILP (never a MIP incumbent), widened outward by `LP_SLACK`."""

    def __init__(self, m: MILP, time_limit: float | None = None) -> None:
        """`time_limit`: wall-clock seconds per solve, None for none (the default: a stop on
        the clock would make the bounds depend on the machine's load; an LP ends anyway)."""
        import highspy

        self._highspy = highspy
        self._h = highspy.Highs()
        self._h.setOptionValue("output_flag", False)
        self._h.setOptionValue("threads", 1)
        if time_limit is not None:
            self._h.setOptionValue("time_limit", float(time_limit))
        self._h.passModel(_highs_model(replace(m, objective={}, offset=0.0), relaxed=True))
        self._costed: np.ndarray = np.zeros(0, dtype=np.int32)

    def optimum(self, idx: list[int], coef: list[float], sense: Sense) -> float | None:
        """max (or min) of sum_j coef_j x_idx_j over the relaxation, widened outward; -inf
        (max) / +inf (min) when the relaxation is infeasible, None when the solve failed."""
        hs, h = self._highspy, self._h
        if len(self._costed):
            h.changeColsCost(len(self._costed), self._costed, np.zeros(len(self._costed)))
        self._costed = np.asarray(idx, dtype=np.int32)
        h.changeColsCost(len(idx), self._costed, np.asarray(coef, dtype=np.float64))
        h.changeObjectiveSense(hs.ObjSense.kMaximize if sense == "max" else hs.ObjSense.kMinimize)
        h.run()
        status = h.getModelStatus()
        if status == hs.HighsModelStatus.kInfeasible:
            return -math.inf if sense == "max" else math.inf
        if status != hs.HighsModelStatus.kOptimal:
            return None
        value = float(h.getInfo().objective_function_value)
        slack = LP_SLACK * (1.0 + abs(value))
        return value + slack if sense == "max" else value - slack

    def set_bounds(self, var: int, lo: float, hi: float) -> None:
        """Narrow a variable's bounds in the relaxation (later optima see them)."""
        self._h.changeColBounds(int(var), float(lo), float(hi))


def _gap(bound: float, incumbent: float | None) -> float:
    if incumbent is None or not math.isfinite(bound):
        return math.inf
    return abs(bound - incumbent) / max(abs(incumbent), 1e-10)


def _solve_gurobi(m: MILP, limits: _Limits) -> MILPResult | None:
    """Solve with Gurobi; None when the licence refuses the model (caller falls back)."""
    import gurobipy as gp
    from gurobipy import GRB

    time_limit, threshold = limits.time_limit, limits.threshold

    try:
        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        model = gp.Model(env=env)
        model.Params.Threads = int(limits.threads)
        model.Params.MIPGap = limits.rel_gap
        model.Params.Seed = 0
        if time_limit is not None:
            model.Params.TimeLimit = float(time_limit)
        if limits.node_limit is not None:
            model.Params.NodeLimit = float(limits.node_limit)
        vtype = np.array([GRB.BINARY if b else GRB.CONTINUOUS for b in m.integer])
        x = model.addMVar(m.num_vars, lb=np.asarray(m.lb), ub=np.asarray(m.ub), vtype=vtype)
        a = m.matrix()
        lo, hi = np.asarray(m.row_lo), np.asarray(m.row_hi)
        for mask, op, rhs in ((np.isfinite(hi), "<=", hi), (np.isfinite(lo), ">=", lo)):
            if mask.any():
                sense_char = GRB.LESS_EQUAL if op == "<=" else GRB.GREATER_EQUAL
                model.addMConstr(a[mask], x, sense_char, rhs[mask])
        model.setMObjective(
            None, m.cost(), m.offset, sense=GRB.MAXIMIZE if m.sense == "max" else GRB.MINIMIZE
        )
        stopped = {"flag": False}

        def callback(mdl: object, where: int) -> None:
            if threshold is None or where != GRB.Callback.MIP:
                return
            bnd = mdl.cbGet(GRB.Callback.MIP_OBJBND)  # type: ignore[attr-defined]
            best = mdl.cbGet(GRB.Callback.MIP_OBJBST)  # type: ignore[attr-defined]
            inc = best if abs(best) < GRB.INFINITY else None
            if settled(m.sense, bnd, inc, threshold):
                stopped["flag"] = True
                mdl.terminate()  # type: ignore[attr-defined]

        start = time.perf_counter()
        model.optimize(callback if threshold is not None else None)
        seconds = time.perf_counter() - start
    except gp.GurobiError as err:  # size-limited licence, no licence, expired licence
        if getattr(err, "errno", None) in (10009, 10010) or "licen" in str(err).lower():
            _note_gurobi_fallback()
            return None
        raise
    inf = math.inf if m.sense == "max" else -math.inf
    if model.Status in (GRB.INFEASIBLE,):
        return MILPResult("infeasible", -inf, None, None, 0.0, "gurobi", seconds)
    if model.Status in (GRB.UNBOUNDED, GRB.INF_OR_UNBD):
        return MILPResult("unbounded", inf, None, None, math.inf, "gurobi", seconds)
    incumbent = float(model.ObjVal) if model.SolCount > 0 else None
    solution = np.asarray(x.X) if model.SolCount > 0 else None
    bound = float(model.ObjBound) if model.IsMIP else (incumbent if incumbent is not None else inf)
    if model.Status == GRB.OPTIMAL:
        st: Status = "optimal"
        if incumbent is not None:
            bound = max(bound, incumbent) if m.sense == "max" else min(bound, incumbent)
    elif stopped["flag"] or model.Status == GRB.INTERRUPTED:
        st = "decided"
    elif model.Status == GRB.TIME_LIMIT:
        st = "time_limit"
    elif model.Status == GRB.NODE_LIMIT:
        st = "node_limit"
    else:
        st, bound = "error", inf
    nodes = int(model.NodeCount) if model.IsMIP else 0
    model.dispose()
    env.dispose()
    return MILPResult(
        st, bound, incumbent, solution, _gap(bound, incumbent), "gurobi", seconds, nodes
    )
