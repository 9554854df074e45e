"""What the README's install lines bring: the main job's install, and `pip install -e ".[tensorboard]"`,
bring TensorBoard, which the main job's last line tells the user to run (TensorFlow does not install it).

Read from the meta-package's pyproject.toml and the README's `<!-- main-job -->` command, which is what
pip resolves; the `docs` session installs the `examples` extra from the same table.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def extra_requirements(extra: str) -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    return {Requirement(r).name for r in extras[extra]}


def main_job_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- main-job -->\s*```bash\n(?P<command>.*?)\n```", readme, re.DOTALL)
    assert match, "README.md has no <!-- main-job --> bash block"
    return match["command"]


def test_the_main_job_suggests_tensorboard_and_its_install_brings_it():
    script = (ROOT / "examples" / "digits_convnet.py").read_text(encoding="utf-8")
    assert "tensorboard --logdir" in script  # the last line the user reads
    extras = re.findall(r'-e "\.\[(?P<extras>[^\]]+)\]"', main_job_command())
    assert extras, main_job_command()
    installed = set().union(*(extra_requirements(e.strip()) for x in extras for e in x.split(",")))
    assert "tensorboard" in installed, (extras, installed)


def test_the_tensorboard_extra_brings_tensorboard():
    assert extra_requirements("tensorboard") == {"tensorboard"}
