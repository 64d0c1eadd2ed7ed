"""Small wrappers over optimisation solvers (HiGHS for MILP), free of Crane concepts."""

from crane.solve.milp import Expr, Model, Solution, Status

__all__ = ["Expr", "Model", "Solution", "Status"]
