"""The HTML report: one self-contained file a person opens offline and mails on, with the decision,
fleet, placements, explanation, why-not and charts; checked as text and in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SCENARIOS, shipped_plan


def _planned(name: str) -> dict:
    """The plan `plan scenarios/NAME` makes (multi-year when the scenario is), once per test run."""
    return shipped_plan(name)[1]


NETWORK = re.compile(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(|@import|<script|<link""", re.I)


def _bank_html() -> str:
    from planner.cli.html import plan_html

    return plan_html(shipped_plan("bank.yaml")[1])


def test_bank_report_holds_decision_fleet_placements_explanation_whynot_and_charts():
    from planner.cli.render import headline

    plan = shipped_plan("bank.yaml")[1]
    page = _bank_html()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert headline(plan).split(": ", 1)[1].split(", ", 1)[1].replace("$", "").replace("'", "&#x27;") in page.replace("$", "")
    assert plan["summary"][:60].replace("'", "&#x27;") in page
    assert "h200-nvl-x4" in page and "What to buy or rent" in page
    assert "Job assistant" in page and "users/rep" in page
    assert "Why this plan: constraints and prices" in page and "policy.redundancy" in page
    assert "Why not the other accelerators" in page and "Next-best fleet" in page
    assert "Cost per year by component" in page and "Why not: extra cost" in page
    assert page.count("<svg") == 2 and page.count('class="bar"') >= 4 + 11  # 4 components, 11 costlier accelerators


def test_report_is_self_contained_small_and_the_same_every_time():
    page = _bank_html()
    assert not NETWORK.search(page), NETWORK.search(page).group(0)
    assert len(page.encode()) < 8_000_000
    assert page == _bank_html()


def test_multi_year_report_shows_cash_and_annuitised_per_year_against_the_budget():
    from planner.cli.html import plan_html

    plan = _planned("annual-budget.yaml")
    page = plan_html(plan)
    assert "Cash and cost per year" in page and "Year by year" in page and "Purchases and reservations" in page
    # cost breakdown, cash per year with the budget line, why-not deltas (multi-year plans are explained too)
    assert page.count("<svg") == 3 and 'stroke-dasharray="6 3"' in page
    for y in plan["years"]:
        assert f"year {y['year']}, capex (cash): " in page and f"year {y['year']}, annuitised cost: " in page


def test_multi_year_headline_adds_up():
    """Each per-year figure times the years gives its own total; cash and annuitised kept apart."""
    from planner.cli.render import headline

    plan = _planned("annual-budget.yaml")
    line = headline(plan)
    nums = {k: float(v.replace(",", "")) for k, v in re.findall(r"(\w+) \$([\d,]+)", line)}
    assert "cash" in line and "annuitised" in line
    cash_total = float(re.search(r"cash \$([\d,]+) over", line).group(1).replace(",", ""))
    cash_avg = float(re.search(r"\(\$([\d,]+) a year on average\)", line).group(1).replace(",", ""))
    ann_year = float(re.search(r"annuitised \$([\d,]+) per year", line).group(1).replace(",", ""))
    ann_total = float(re.search(r"per year \(\$([\d,]+) over", line).group(1).replace(",", ""))
    n = plan["horizon_years"]
    assert abs(cash_avg * n - cash_total) <= n and abs(ann_year * n - ann_total) <= n, (line, nums)
    assert cash_total == round(plan["cash_total_usd"])


def test_cli_writes_html_and_never_overwrites(plan_cli, tmp_path):
    out = tmp_path / "report.html"
    r = plan_cli(SCENARIOS / "bank.yaml", "--format", "html", "-o", out)
    assert r.code == 0 and r.out == "" and out.read_text().startswith("<!DOCTYPE html>")
    again = plan_cli(SCENARIOS / "bank.yaml", "--format", "html", "-o", out)
    assert again.code == 2 and "--force" in again.err


def test_sweep_html_marks_fleet_changes(plan_cli, tmp_path):
    out = tmp_path / "sweep.html"
    r = plan_cli("sweep", SCENARIOS / "bank.yaml", "--set", "jobs.0.concurrent_users=100,200,400",
                 "--format", "html", "-o", out, "--workers", "1")
    assert r.code == 0, r.err
    page = out.read_text()
    assert "Cost per year against concurrent users" in page  # in words; the axis keeps the path
    assert "concurrent users (jobs.0.concurrent_users)" in page
    assert page.count('class="point"') == 3 and 'class="change"' in page and "Where the fleet changes" in page
    assert not NETWORK.search(page)


def test_a_categorical_sweep_draws_markers_apart_and_labels_its_axis(plan_cli, tmp_path):
    """The report review: 'none' and 'n+1' were joined by a line as if values lay between them, the
    series told apart only by those lines, and the axis read as the raw setting path."""
    out = tmp_path / "sweep.html"
    r = plan_cli("sweep", SCENARIOS / "bank.yaml", "--set", "policy.redundancy=none,n+1",
                 "--set", "jobs.0.min_tokens_per_s_per_user=10,20", "--format", "html", "-o", out, "--workers", "1")
    assert r.code == 0, r.err
    chart = out.read_text().split("<svg", 1)[1].split("</svg>", 1)[0]
    assert 'class="series"' not in chart  # no line between categories
    assert chart.count('<circle class="point"') == 2 + 1 and chart.count('<polygon class="point"') == 2 + 1  # + legend
    assert "redundancy (policy.redundancy)" in chart
    assert "min tokens/s per user = 10" in chart and "min tokens/s per user = 20" in chart  # the series, in words
    numeric = tmp_path / "numeric.html"
    assert plan_cli("sweep", SCENARIOS / "bank.yaml", "--set", "jobs.0.min_tokens_per_s_per_user=10,20",
                    "--format", "html", "-o", numeric, "--workers", "1").code == 0
    assert "min tokens/s per user (jobs.0.min_tokens_per_s_per_user)" in numeric.read_text()
    assert 'class="series"' in numeric.read_text()


# --- in a real browser ---------------------------------------------------------------------------------

def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


PROBE = """<script>
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('svg.chart')];
  const drawn = charts.filter(s => { const b = s.getBoundingClientRect(); return b.width > 100 && b.height > 60; });
  const marks = [...document.querySelectorAll('svg.chart rect.bar, svg.chart circle.point')]
    .filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
  document.body.insertAdjacentHTML('beforeend',
    '<pre id="probe">charts=' + charts.length + ' drawn=' + drawn.length + ' marks=' + marks.length + '</pre>');
});
</script>"""


def _browse(chromium: str, page: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """(DOM after load with the probe's line, console log, screenshot) of `page`, network off."""
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp_path / 'profile'}"]
    probed = tmp_path / ("probed-" + page.name)
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run([*flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    shot = tmp_path / (page.stem + ".png")
    pic = subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    return dom.stdout, dom.stderr + pic.stderr, shot


@pytest.mark.parametrize("what", ["bank", "annual-budget", "sweep"])
def test_report_renders_in_headless_chromium(what, plan_cli, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium binary on PATH: install Debian's chromium (apt-get install -y chromium) "
                    "to check the HTML report in a real browser")
    page = tmp_path / f"{what}.html"
    if what == "sweep":
        args = ["sweep", SCENARIOS / "bank.yaml", "--set", "jobs.0.concurrent_users=100,200,400", "--workers", "1"]
    else:
        args = [SCENARIOS / f"{what}.yaml"]
    assert plan_cli(*args, "--format", "html", "-o", page).code == 0
    dom, log, shot = _browse(chromium, page, tmp_path)
    probe = re.search(r"charts=(\d+) drawn=(\d+) marks=(\d+)", dom)
    assert probe, f"the page did not finish loading in chromium:\n{log[-2000:]}"
    charts, drawn, marks = map(int, probe.groups())
    assert charts == drawn >= (1 if what == "sweep" else 2) and marks >= 3
    console = [ln for ln in log.splitlines() if "CONSOLE" in ln or "net::ERR" in ln or "Uncaught" in ln]
    assert not console, console
    from PIL import Image, ImageStat

    img = Image.open(shot).convert("L")
    assert img.size == (1280, 2000)
    top = img.crop((0, 0, 1280, 1000))
    assert ImageStat.Stat(top).stddev[0] > 20, "the screenshot is blank"
    assert len(img.getcolors(1 << 16) or range(1 << 16)) > 50  # text, bars and lines in many shades


def test_a_bar_chart_label_is_never_cut_off():
    """'36x mi300x-x1 on-demand' ran off the chart's left edge (the new-user review): the labels'
    column is as wide as the longest label."""
    from planner.cli import svg

    label = "36x mi300x-x1 on-demand (runpod)"
    out = svg.hbar([(label, 100.0), ("b", 50.0)], "t")
    x = float(out.split(f'text-anchor="end" fill="#2d3748">{label}')[0].rsplit('x="', 1)[1].split('"')[0])
    assert x >= 7 * len(label)
