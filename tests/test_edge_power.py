"""An edge job under a power limit below every device's rating (the expert review: a 100 W robot
budget beside Jetson Thor's 130 W): the answer says the device is planned at its rated power and
what to do, and the accelerators ruled out for one reason are one line, not 36."""

from __future__ import annotations

import yaml


def test_an_edge_power_limit_below_the_rating_says_what_is_modelled_and_groups_the_rest(plan_cli, tmp_path):
    path = tmp_path / "robots.yaml"
    path.write_text(yaml.safe_dump({"name": "robots", "jobs": [
        {"name": "brain", "stage": "edge", "device": "robot", "model": "qwen3-8b", "precision": "fp4", "devices": 500,
         "min_tokens_per_s": 20, "max_power_w": 100}]}, sort_keys=False))
    r = plan_cli(path, "--explain", "none")
    assert r.code == 3, r.err
    out = r.out + r.err
    assert ("jetson-agx-thor: draws 130 W at its rated power, above the 100 W limit (a module with lower power modes is "
            "planned at its top one") in out
    grouped = [line for line in out.splitlines() if "no robot-class device carries it" in line]
    assert len(grouped) == 1 and grouped[0].lstrip().split(":")[0].endswith(" accelerators"), grouped
