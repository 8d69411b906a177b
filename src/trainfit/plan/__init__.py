"""The planner and its typed results: which instance type, how many nodes, which settings, how long, what it
costs (``search.py``: the search; ``cost.py``: the cost model)."""

from trainfit.errors import PlanError
from trainfit.plan.request import MEMORY_MARGIN_DEFAULT, PIN_FIELDS, PlanRequest
from trainfit.plan.search import plan
from trainfit.plan.types import Plan, PlanResult, Rejection

__all__ = ["MEMORY_MARGIN_DEFAULT", "PIN_FIELDS", "Plan", "PlanError", "PlanRequest", "PlanResult", "Rejection",
           "plan"]
