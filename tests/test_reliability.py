"""Hostile and careless input, second pass: special files, size caps, numbers the arithmetic cannot take,
--output that must not be replaced, names with control characters, CSV formulas. Each test checks what
a user sees: the exit code, the first line on stderr, the files left behind."""

from __future__ import annotations

import io
import os
import stat

import pytest
import yaml
from conftest import ROOT, SCENARIOS

BANK = SCENARIOS / "bank.yaml"


def _first(res) -> str:
    """The first stderr line that is not progress ('planning ...')."""
    lines = [x for x in res.err.strip().splitlines() if not x.startswith("planning ")]
    return lines[0] if lines else ""


def _scenario(tmp_path, change, name="s.yaml"):
    doc = yaml.safe_load(BANK.read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


# --- inputs: only regular files, at most the cap read ------------------------------------------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_as_scenario_catalog_and_plan(tmp_path, plan_cli, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    link = tmp_path / "scenario.yaml"
    link.symlink_to(device)
    table = tmp_path / "offers.csv"
    table.symlink_to(device)
    for args in (("validate", device), ("validate", link), ("validate", BANK, "--catalog", table),
                 ("verify", BANK, link)):
        res = plan_cli(*args)
        assert res.code == 2, (args, res.err)
        assert ("is not a regular file" in _first(res) or "cannot tell which catalog table" in _first(res)
                if "--catalog" in args else "is not a regular file" in _first(res)), res.err


def test_fifo_is_refused_without_blocking(tmp_path, plan_cli):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    res = plan_cli("validate", fifo)
    assert res.code == 2 and "is not a regular file" in _first(res)


def test_file_over_the_cap_is_refused(tmp_path, plan_cli):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.write(b"# " + b"x" * (6 * 1024 * 1024) + b"\n")
    res = plan_cli("validate", big)
    assert res.code == 2 and "limited to 5 MB" in _first(res)


def test_scenario_from_stdin(plan_cli, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BANK.read_bytes())))
    res = plan_cli("validate", "-")
    assert res.code == 0 and "valid" in res.out


def test_catalog_with_a_utf8_bom_is_accepted(tmp_path, plan_cli):
    offers = tmp_path / "offers.csv"
    offers.write_bytes(b"\xef\xbb\xbf" + (ROOT / "catalog" / "offers.csv").read_bytes())
    res = plan_cli("validate", BANK, "--catalog", offers)
    assert res.code == 0, res.err


def test_empty_catalog_folder_is_refused(tmp_path, plan_cli):
    (tmp_path / "cat").mkdir()
    res = plan_cli("validate", BANK, "--catalog", tmp_path / "cat")
    assert res.code == 2 and "holds no catalog table" in res.err


def test_catalog_key_does_not_read_other_files(tmp_path, plan_cli):
    secret = tmp_path / "notes.txt"
    secret.write_text("TOP-SECRET-LINE,password=hunter2\n")
    path = _scenario(tmp_path, lambda d: d.update(catalog=str(secret)))
    res = plan_cli("validate", path)
    assert res.code == 2 and "cannot tell which catalog table" in res.err
    assert "TOP-SECRET" not in res.err and "hunter2" not in res.err


# --- numbers the arithmetic cannot take ----------------------------------------------------------------

def _inline_model(**extra):
    base = {"id": "tiny-moe", "name": "tiny", "family": "t", "params_b": 10, "active_params_b": 2, "layers": 8,
            "hidden_size": 1024, "attention_heads": 8, "kv_heads": 8, "head_dim": 128, "ffn_size": 4096,
            "vocab_size": 32000, "source": "test", "as_of": "2026-01-01"}
    return {**base, **extra}


@pytest.mark.parametrize("label,change,words", [
    ("discount 1e-17", lambda d: d["policy"].update(discount_rate=1e-17), "too small to compute with"),
    ("life 1e-300", lambda d: d.update(prices=[{"offer": "h200-nvl-x4-buy-oem", "useful_life_years": 1e-300}]),
     "useful_life_years"),
    ("experts per token", lambda d: d.update(models=[_inline_model(experts=4, experts_per_token=8)]),
     "experts_per_token (8) exceeds experts (4)"),
    ("MLA without ranks", lambda d: d.update(models=[_inline_model(attention="mla")]), "attention 'mla' needs"),
    ("users true", lambda d: d["jobs"][0].update(concurrent_users=True), "true is not a number"),
])
def test_numbers_the_arithmetic_cannot_take_are_input_errors(tmp_path, plan_cli, label, change, words):
    res = plan_cli("validate", _scenario(tmp_path, change))
    assert res.code == 2, (label, res.err)
    assert words in res.err and "Traceback" not in res.err


@pytest.mark.parametrize("value", ["inf", "1e308"])
def test_catalog_infinities_are_refused(tmp_path, plan_cli, value):
    lines = (ROOT / "catalog" / "accelerators.csv").read_text().splitlines()
    header = [c.strip() for c in next(line for line in lines if not line.startswith("#")).split(",")]
    col = header.index("memory_gb")
    row = next(line for line in lines if line.startswith("h200-nvl,"))
    cells = row.split(",")
    cells[col] = value
    (tmp_path / "accelerators.csv").write_text(",".join(header) + "\n" + ",".join(cells) + "\n")
    res = plan_cli("validate", BANK, "--catalog", tmp_path / "accelerators.csv")
    assert res.code == 2 and "memory_gb" in res.err


def test_absurd_system_size_is_an_input_error(tmp_path, plan_cli):
    lines = (ROOT / "catalog" / "systems.csv").read_text().splitlines()
    header = next(line for line in lines if not line.startswith("#"))
    cols = [c.strip() for c in header.split(",")]
    row = next(line for line in lines if line.startswith("h200-nvl-x4,")).split(",")
    row[cols.index("accelerators")] = "1000000000"
    (tmp_path / "systems.csv").write_text(header + "\n" + ",".join(row) + "\n")
    res = plan_cli("validate", BANK, "--catalog", tmp_path / "systems.csv")
    assert res.code == 2 and "accelerators" in res.err


def test_estimate_tokens_inf_is_refused(plan_cli):
    res = plan_cli("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--stage", "finetune",
                   "--tokens", "inf", "--format", "json")
    assert res.code == 2 and "Infinity" not in res.out


def test_one_year_with_a_demand_multiplier_plans_the_multiplied_demand(tmp_path, plan_cli):
    import json

    def change(d):
        d["horizon_years"] = 1
        d["jobs"][0]["demand_multipliers"] = [5]
        d["policy"]["redundancy"] = "none"
    res = plan_cli(_scenario(tmp_path, change), "--format", "json", "--no-timings")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    assert sum(p["users_served"] for p in plan["jobs"][0]["placements"]) == 5 * 200


# --- --output ------------------------------------------------------------------------------------------

def test_output_refuses_fifo_symlink_device_and_inputs_before_solving(tmp_path, plan_cli):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.json"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    scenario = tmp_path / "bank.yaml"
    scenario.write_text(BANK.read_text())
    cases = [(fifo, True, "not a regular file"), (link, True, "symbolic link"), (dangling, False, "symbolic link"),
             (dangling, True, "symbolic link"), (scenario, True, "input of this run"), (tmp_path, True, "is a folder")]
    if os.path.exists("/dev/null"):
        cases.append((os.devnull, True, "not a regular file"))
    for out, force, words in cases:
        res = plan_cli(scenario, "--format", "json", "-o", out, *(["--force"] if force else []))
        assert res.code == 2, (out, res.err)
        assert words in _first(res) and str(out) in _first(res), res.err
        assert "planning" not in res.err  # refused before any solving
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and target.read_text() == "keep me"
    assert os.path.islink(dangling) and not os.path.exists(tmp_path / "nowhere.json")
    assert scenario.read_text() == BANK.read_text()
    if os.path.exists("/dev/null"):
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_output_respects_the_umask(tmp_path, plan_cli):
    old = os.umask(0o022)
    try:
        res = plan_cli("catalog", "offers")  # cheap warm-up: nothing written
        res = plan_cli(BANK, "--format", "json", "-o", tmp_path / "plan.json")
    finally:
        os.umask(old)
    assert res.code == 0, res.err
    assert stat.S_IMODE(os.stat(tmp_path / "plan.json").st_mode) == 0o644


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_in_a_read_only_folder_exits_2_before_solving(tmp_path, plan_cli):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        res = plan_cli(BANK, "-o", folder / "plan.txt")
    finally:
        folder.chmod(0o755)
    assert res.code == 2 and "cannot write in folder" in _first(res)


def test_a_full_disk_exits_2_and_leaves_nothing(tmp_path, plan_cli, monkeypatch):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    res = plan_cli(BANK, "--format", "json", "-o", tmp_path / "plan.json")
    assert res.code == 2, res.err
    assert "could not be written" in _first(res) and "No space left" in _first(res)
    assert list(tmp_path.iterdir()) == []


# --- what is printed -------------------------------------------------------------------------------------

def test_control_characters_in_names_are_escaped(tmp_path, plan_cli):
    path = _scenario(tmp_path, lambda d: d.update(name="evil\x1b[2J\rname"))
    res = plan_cli(path)
    assert res.code == 0, res.err
    assert "\x1b" not in res.out and "\r" not in res.out and "\\x1b[2J" in res.out


def test_csv_export_escapes_formula_cells(tmp_path, plan_cli):
    import csv

    text = (ROOT / "catalog" / "offers.csv").read_text().splitlines()
    rows = list(csv.DictReader(line for line in text if not line.startswith("#")))
    row = next(r for r in rows if r["id"] == "h200-nvl-x4-buy-oem")
    row["source"] = "=HYPERLINK(\"http://x\",\"click\")"
    with open(tmp_path / "offers.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    res = plan_cli("catalog", "offers", "--format", "csv", "--catalog", tmp_path / "offers.csv")
    assert res.code == 0, res.err
    cells = [c for r in csv.reader(io.StringIO(res.out)) for c in r]
    assert "'=HYPERLINK(\"http://x\",\"click\")" in cells
    assert not any(c.startswith(("=", "+", "@")) for c in cells)


def test_demand_grown_beyond_a_thousandfold_is_an_input_error_not_contradictory_advice(tmp_path, plan_cli):
    def grow(rate, years):
        def change(d):
            d["horizon_years"] = years
            d["jobs"][0]["growth_per_year"] = rate
            d["budget"] = {"usd_per_year": 2_000_000}
        return change
    res = plan_cli(_scenario(tmp_path, grow(10, 20)), "--quiet")  # 11^19: was exit 3 "found a plan without relaxing"
    assert res.code == 2, res.err
    error = next(x for x in res.err.splitlines() if x.startswith("error:"))  # (after the unit-slip warning on 10)
    assert error.startswith("error: jobs.0.growth_per_year (assistant): year 20's demand would be 6.12e+19 "
                            "times the stated size"), res.err
    from planner.data.errors import InputError
    from planner.data.scenario import load_scenario
    from planner.data.years import check_multiyear

    check_multiyear(load_scenario(_scenario(tmp_path, grow(1.0, 10))))  # 512x over 10 years: planned

    def multipliers(values):
        return lambda d: (d.update(horizon_years=len(values)), d["jobs"][0].update(demand_multipliers=values))
    check_multiyear(load_scenario(_scenario(tmp_path, multipliers([1, 1000]))))
    with pytest.raises(InputError, match="year 2.s demand would be 1,001 times"):
        check_multiyear(load_scenario(_scenario(tmp_path, multipliers([1, 1001]))))
