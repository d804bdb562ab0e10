"""What a plan was made from, for an audit trail: the planner's version, the calibration it used, and
digests of the catalog and of the scenario as planned (its parsed fields, so that comments and
formatting do not change it). Same input, same digests: no clock, no path."""

from __future__ import annotations

import hashlib
import json

from planner import __version__
from planner.data.catalog import Catalog
from planner.data.scenario import Scenario
from planner.physics.calibration import default as calibration

TABLES = ("accelerators", "systems", "offers", "models", "api_offers")


def digest(data) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def provenance(s: Scenario, cat: Catalog) -> dict:
    """The plan's provenance block (planner.data.plan.Provenance)."""
    rows = {t: sorted((r.model_dump(mode="json") for r in cat.table(t).values()), key=lambda r: r["id"])
            for t in TABLES}
    return {"planner_version": __version__, "calibration": calibration().fitted_on,
            "catalog_sha256": digest(rows), "scenario_sha256": digest(s.model_dump(mode="json"))}
