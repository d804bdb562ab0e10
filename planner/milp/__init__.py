"""The fleet MILP. PuLP is imported here first, without its optional HiGHS interface: PuLP probes
for highspy when it is imported, and highspy loads numpy (about 0.08 s of a plan's 1 s start-up on
CBC, the default). solvers.make_solver loads PuLP's HiGHS interface when a plan asks for HiGHS."""

import sys

if "pulp" not in sys.modules and "highspy" not in sys.modules:
    sys.modules["highspy"] = None  # type: ignore[assignment]  (import highspy raises ImportError)
    try:
        import pulp  # noqa: F401
    finally:
        del sys.modules["highspy"]
