"""Fleet planner: the cheapest AI hardware fleet that runs your jobs, and why."""

__version__ = "0.1.0"
