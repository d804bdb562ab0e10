"""Hostile inputs: each ends in its exit code and a message naming what is wrong, never a traceback.

Every case runs the `plan` command in-process (tests/conftest.py) on a file written to tmp_path.
"""

from __future__ import annotations

import pytest
from conftest import SCENARIOS

SERVE = "name: t\njobs:\n  - name: chat\n    stage: serve\n    model: llama-3.1-8b\n    concurrent_users: {users}\n"


def serve(users: str) -> str:
    return SERVE.format(users=users)


def alias_bomb() -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# name -> (file bytes, exit code, text the first line of stderr must contain)
CASES = {
    "alias bomb": (alias_bomb().encode(), 2, "document expands to more than 200000 values"),
    "10,000 nested lists": (("[" * 10_000 + "]" * 10_000).encode(), 2, "nesting deeper than 64 levels"),
    "10,000 nested mappings": (("a: {" * 10_000 + "}" * 10_000).encode(), 2, "nesting deeper than 64 levels"),
    "binary data": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 2, "file holds binary data, not YAML text"),
    "non-UTF-8 (latin-1)": ("name: caf\u00e9\njobs: []\n".encode("latin-1"), 2, "not UTF-8 text (byte 9)"),
    "empty file": (b"", 2, "file is empty"),
    "list at top level": (b"- a\n- b\n", 2, "the top level is a list, not a mapping"),
    "malformed YAML": (b"name: [unclosed\njobs:\n", 2, "malformed YAML"),
    "NaN users": (serve(".nan").encode(), 2, "jobs.0.concurrent_users: Input should be a finite number"),
    "infinite users": (serve(".inf").encode(), 2, "jobs.0.concurrent_users: Input should be a finite number"),
    "1e300 users": (serve("1e300").encode(), 2, "jobs.0.concurrent_users: 1e+300 is out of range"),
    "negative users": (serve("-5").encode(), 2, "jobs.0.concurrent_users: Input should be greater than or equal to 1"),
    "zero users": (serve("0").encode(), 2, "jobs.0.concurrent_users: Input should be greater than or equal to 1"),
    "users as text": (serve("lots").encode(), 2, "jobs.0.concurrent_users: Input should be a valid integer"),
    "1e9 users (above the cap)": (serve("1e9").encode(), 2,
                                  "jobs.0.concurrent_users: Input should be less than or equal to 100000000"),
    "duplicate job names": (b"name: t\njobs:\n"
                            b"  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 10}\n"
                            b"  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 20}\n",
                            2, "two jobs are named 'chat'"),
    "duplicate YAML key": (b"name: t\nname: u\njobs: []\n", 2, ":2: duplicate key 'name'"),
    "unknown key": (serve("10").replace("concurrent_users", "concurent_users").encode(), 2,
                    "unknown key 'concurent_users'"),
    "unknown model": (serve("10").replace("llama-3.1-8b", "llama-3.1-8bb").encode(), 2,
                      "unknown model 'llama-3.1-8bb'"),
    "negative budget, zero power and hours": (
        b"name: t\nbudget: {usd_per_year: -100}\nsite: {power_cap_kw: 0}\njobs:\n"
        b"  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 10, hours_per_day: 0}\n",
        2, "3 problems:"),
    "1e300 budget": (b"name: t\nbudget: {usd_per_year: 1e300}\njobs:\n"
                     b"  - {name: chat, stage: serve, model: llama-3.1-8b, concurrent_users: 10}\n",
                     2, "budget.usd_per_year: Input should be less than or equal to 10000000000000"),
    "rollout speed 1e-300": (b"name: t\njobs:\n  - {name: r, stage: rl, model: llama-3.1-8b, rollout_tokens_per_s: "
                             b"1e9, min_tokens_per_s_per_rollout: 1e-300, train_tokens_per_day: 1e6}\n",
                             2, "min_tokens_per_s_per_rollout: Input should be greater than or equal to 0.1"),
    "no jobs": (b"name: t\njobs: []\n", 2, "jobs: no jobs"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file(name, tmp_path, plan_cli):
    data, code, first = CASES[name]
    path = tmp_path / "scenario.yaml"
    path.write_bytes(data)
    r = plan_cli(path, "--format", "json")
    assert r.code == code, r.err
    assert first in r.err.splitlines()[0], r.err
    assert "Traceback" not in r.err and r.out == ""


def test_unknown_key_says_did_you_mean(tmp_path, plan_cli):
    path = tmp_path / "s.yaml"
    path.write_text(serve("10").replace("concurrent_users", "concurent_users"))
    r = plan_cli(path)
    assert r.code == 2
    assert "unknown key 'concurent_users'" in r.err and "did you mean 'concurrent_users'?" in r.err


def test_50_mb_file(tmp_path, plan_cli):
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:
        fh.write(b"# " + b"x" * (50 * 1024 * 1024) + b"\n")
    r = plan_cli(path)
    assert r.code == 2
    assert r.err.splitlines()[0] == f"error: {path}: file is 52.4 MB; scenarios are limited to 5 MB"


def test_missing_file_and_folder(tmp_path, plan_cli):
    r = plan_cli(tmp_path / "nope.yaml")
    assert r.code == 2 and r.err.splitlines()[0] == f"error: {tmp_path / 'nope.yaml'}: file not found"
    r = plan_cli(tmp_path)
    assert r.code == 2 and r.err.splitlines()[0] == f"error: {tmp_path}: is a folder, not a file"


def test_1e8_is_a_number_not_a_string(tmp_path, plan_cli):
    """YAML 1.1 reads 1e8 as text; the planner reads it as the number people mean."""
    path = tmp_path / "s.yaml"
    path.write_text(serve("1e8") + "    min_tokens_per_s_per_user: 1e4\n")
    r = plan_cli("validate", path)
    assert r.code == 0, r.err
    assert "100,000,000 users x 10000 tok/s" in r.out


# --- catalog files (--catalog) -------------------------------------------------------------------

OFFER_HEAD = "id,system,acquisition,provider,price_usd_per_hour,source,as_of\n"
CATALOGS = {
    "missing columns": ("offers.csv", "id,name,system\nfoo,bar,baz\n", "5 problems:"),
    "row naming an unknown system": ("offers.csv", OFFER_HEAD + "my-offer,no-such-system,on-demand,me,3.0,quote,2026-01-01\n",
                                     "catalog: offers: offer 'my-offer' names unknown system 'no-such-system'"),
    "contradictory duplicate rows": ("offers.csv", OFFER_HEAD + "my-offer,h200-sxm-x8,on-demand,me,3.0,quote,2026-01-01\n"
                                     "my-offer,h200-sxm-x8,on-demand,me,9.0,quote,2026-01-01\n",
                                     "offers.csv: duplicate id 'my-offer'"),
    "a purchase without a price": ("offers.csv", OFFER_HEAD + "my-offer,h200-sxm-x8,buy,me,3.0,quote,2026-01-01\n",
                                   "offer 'my-offer' buys but lacks purchase_usd or useful_life_years"),
    "negative price": ("offers.csv", OFFER_HEAD + "my-offer,h200-sxm-x8,on-demand,me,-3,quote,2026-01-01\n",
                       "[my-offer]: price_usd_per_hour: Input should be greater than 0"),
    "a scale-up domain larger than the system": (
        "systems.csv", "id,name,accelerator,accelerators,scaleup_domain,power_kw,cooling,kind,source,as_of\n"
                       "odd,Odd box,h200-sxm,2,8,3.0,air,server,my spec,2026-01-01\n",
        "system 'odd' has a scale-up domain of 8 but only 2 accelerators"),
    "duplicate YAML key in models": ("models.yaml", "- id: m1\n  id: m2\n", "models.yaml:2: duplicate key 'id'"),
    "alias bomb in models": ("models.yaml", alias_bomb(), "document expands to more than 200000 values"),
    "non-UTF-8 catalog": ("offers.csv", "id,system\n\u00e9\u00e9,x\n", "not UTF-8 text"),
    "a 200,000-character cell": ("offers.csv", 'id,source\n"' + "a" * 200_000 + '",x\n',
                                 "malformed CSV at row 1: field larger than field limit"),
}


@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_hostile_catalog(name, tmp_path, plan_cli):
    filename, text, first = CATALOGS[name]
    folder = tmp_path / "cat"
    folder.mkdir()
    encoding = "latin-1" if "UTF-8" in name else "utf-8"
    (folder / filename).write_bytes(text.encode(encoding))
    r = plan_cli(SCENARIOS / "bank.yaml", "--catalog", folder)
    assert r.code == 2, r.err
    assert first in r.err.splitlines()[0], r.err


def test_catalog_path_missing(tmp_path, plan_cli):
    r = plan_cli(SCENARIOS / "bank.yaml", "--catalog", tmp_path / "nowhere")
    assert r.code == 2 and "catalog path does not exist" in r.err.splitlines()[0]


# --- scenarios with no plan ----------------------------------------------------------------------

def test_model_that_fits_nowhere_names_reasons(tmp_path, plan_cli):
    """A 122-trillion-parameter model fits no replica on any accelerator: exit 3, with a reason for each
    (its params_b agrees with its architecture, so no warning comes before the diagnosis)."""
    path = tmp_path / "s.yaml"
    path.write_text("""name: giant
models:
  - {id: giant, name: Giant, family: test, params_b: 122423, active_params_b: 122423, layers: 2000,
     hidden_size: 65536, attention_heads: 512, kv_heads: 64, head_dim: 128, ffn_size: 262144,
     vocab_size: 128000, source: a test of a model too large for any fleet, as_of: 2026-01-01}
jobs:
  - {name: chat, stage: serve, model: giant, concurrent_users: 10}
""")
    r = plan_cli(path, "--format", "json")
    assert r.code == 3, r.err
    lines = r.err.splitlines()
    assert lines[0].startswith("infeasible: job 'chat': "), r.err
    assert any(line.strip().startswith("h200-sxm: weights need") for line in lines), r.err
    assert any(line.strip().startswith("b300: weights need") for line in lines), r.err
    assert '"status": "infeasible"' in r.out


JOB = "  - name: {name}\n    stage: serve\n    model: llama-3.1-8b\n    concurrent_users: 10\n"


@pytest.mark.parametrize("names, where, said, fix", [
    (["yes"], ":3:", "YAML reads yes/no/on/off/true/false as true, not as text", "quote it"),
    (["123"], ":3:", "jobs.0.name: 123 is not text", "quote it: name: '123'"),
    (["Ассистент"], ":3:", "jobs.0.name: 'Ассистент' is not allowed here", "use ASCII letters, digits"),
    (["'a '"], ":3:", "jobs.0.name: 'a ' is not allowed here", "not ending with a space"),
    (["a", "a"], ":7:", "jobs.1.name: two jobs are named 'a' (jobs 0 and 1)", "a name of its own"),
])
def test_a_bad_name_is_said_in_words_at_its_line(tmp_path, plan_cli, names, where, said, fix):
    """YAML's booleans and numbers, non-ASCII names, a trailing space and a repeated name: each at
    the line that holds it, in words (never a raw pattern), with how to fix it."""
    path = tmp_path / "s.yaml"
    path.write_text("name: t\njobs:\n" + "".join(JOB.format(name=n) for n in names))
    r = plan_cli("validate", path)
    assert r.code == 2, r.err
    assert f"s.yaml{where}" in r.err and said in r.err and fix in r.err, r.err
    assert "[A-Za-z" not in r.err and "Value error" not in r.err


def test_a_yaml_merge_key_is_said_at_its_line(tmp_path, plan_cli):
    path = tmp_path / "s.yaml"
    path.write_text("name: t\nx: &j {stage: serve}\njobs:\n  - <<: *j\n    name: a\n")
    r = plan_cli("validate", path)
    assert r.code == 2 and "s.yaml:4: YAML merge keys ('<<: *anchor') are not read" in r.err, r.err
    assert "\\n" not in r.err


def test_an_unknown_name_found_after_parsing_points_at_its_line(plan_cli, tmp_path):
    """Schema errors carried file:line, a model or provider unknown to the catalog did not (the
    new-user review): they do now."""
    p = tmp_path / "s.yaml"
    p.write_text("name: t\npolicy: {providers: [runpodd]}\njobs:\n"
                 "  - {name: chat, stage: serve, model: llama-3-70b, concurrent_users: 5}\n")
    r = plan_cli(p)
    assert r.code == 2
    assert f"{p}:4: jobs.0.model (chat): unknown model 'llama-3-70b'" in r.err
    assert f"{p}:2: policy.providers" in r.err and "did you mean 'runpod'" in r.err


def test_a_value_written_with_capitals_is_read_lower_case_with_a_note(plan_cli, tmp_path):
    """README says ids with capitals are read as the catalog's, but 'precision: FP8', 'region: EU'
    and 'redundancy: N+1' were refused (the new-user review): they are read lower-case, each with a
    note on stderr, and a word that is wrong in any case is still exit 2."""
    p = tmp_path / "caps.yaml"
    p.write_text("name: t\nsite: {region: US}\npolicy: {redundancy: N+1, acquisition: [Buy, On-Demand]}\njobs:\n"
                 "  - {name: chat, stage: serve, model: llama-3.1-8b, precision: FP8, concurrent_users: 5}\n")
    r = plan_cli(p, "--format", "json", "--explain", "none")
    assert r.code == 0, r.err
    for word, read in (("N+1", "n+1"), ("FP8", "fp8"), ("US", "us"), ("On-Demand", "on-demand")):
        assert f"'{word}' is read as '{read}'" in r.err
    bad = tmp_path / "bad.yaml"
    bad.write_text(p.read_text().replace("FP8", "FP9"))
    assert plan_cli(bad).code == 2
