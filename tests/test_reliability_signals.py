"""Ctrl-C and `kill` on a real solve: exit 130/143, one stderr line, the CBC child ended, its temporary
files removed and nothing written to --output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to watch the solver process")


def _slow_scenario(tmp_path):
    """Twenty-four serving jobs of assorted models and sizes, buy only, N+1, asked to be proven exactly
    optimal (gap 0): CBC searches for many seconds."""
    import random

    import yaml

    rng = random.Random(11)
    models = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "gemma-3-27b", "mistral-small-24b", "gpt-oss-120b"]
    jobs = [{"name": f"job-{k}", "stage": "serve", "model": rng.choice(models),
             "precision": rng.choice(["bf16", "fp8"]), "context_tokens": rng.choice([4096, 8192, 32768]),
             "concurrent_users": rng.choice([7, 20, 45, 100, 230, 500]),
             "min_tokens_per_s_per_user": rng.choice([10, 20, 30])} for k in range(24)]
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump({"name": "slow", "site": {"kind": "datacenter"},
                                    "policy": {"acquisition": ["buy"], "redundancy": "n+1"},
                                    "solver": {"time_limit_s": 120, "gap": 0.0}, "jobs": jobs}))
    return path


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if int(fh.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        out.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig,code,name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_signal_during_solve_stops_cbc_and_writes_nothing(tmp_path, sig, code, name):
    scenario = _slow_scenario(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "plan.json"
    env = {**os.environ, "TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "planner", str(scenario), "--format", "json", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        deadline, cbc = time.monotonic() + 60, []
        while time.monotonic() < deadline and not cbc and proc.poll() is None:
            time.sleep(0.1)
            cbc = _children(proc.pid)
        assert cbc, "the solver never started: " + proc.stderr.read().decode()[-500:]
        time.sleep(1.0)  # well inside the search
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [x for x in stderr.decode().strip().splitlines() if not x.startswith("planning ")]  # progress
    assert proc.returncode == code, stderr.decode()
    assert len(lines) == 1 and lines[0].startswith(f"interrupted by {name}"), lines
    assert stdout == b""
    assert not out.exists()
    assert not any(_alive(p) for p in cbc), "the CBC child still runs"
    assert list(tmp.iterdir()) == [], "temporary files left behind"



def test_ctrl_c_while_the_command_starts_exits_130_without_a_traceback():
    """A SIGINT while the command's imports load (a second or more on a busy machine) ends like one
    during a solve: exit 130 and one line, not a KeyboardInterrupt traceback. (The child takes
    Python's own SIGINT handler: a test run started as a background job inherits SIGINT ignored.)"""
    code = ("import os, signal, sys\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "class Hook:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'planner.cli.commands':\n"
            "            os.kill(os.getpid(), signal.SIGINT)\n"
            "        return None\n"
            "sys.meta_path.insert(0, Hook())\n"
            "from planner.cli import main\n"
            "main(['--version'])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "interrupted by SIGINT (Ctrl-C) while starting: nothing was done\n"
    assert done.stdout == ""
