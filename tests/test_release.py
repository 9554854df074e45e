"""The release story holds together (docs/releasing.md): versions, pins and changelogs agree.

The eight distributions (seven layers in packages/<layer>/ and the meta-package at the root) are
versioned separately and pin each other with ranges. A version bumped in one `_version.py`
without moving the ranges that name it would publish wheels that cannot be installed together;
a changelog left behind would describe a release that is not the one built. So:

- every requirement on another trainstack distribution, in `dependencies` and in every extra,
  is a range (a lower and an upper bound) that admits that distribution's version in this
  repository (its `_version.py`, found through `[tool.hatch.version]`, as hatch finds it);
- every distribution has a CHANGELOG.md beside its pyproject.toml, with an Unreleased section
  first and the current version as its newest released section;
- the meta-package depends on every layer.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
META_PYPROJECT = ROOT / "pyproject.toml"
PYPROJECTS = [META_PYPROJECT, *sorted((ROOT / "packages").glob("*/pyproject.toml"))]
# hatch's regex version source: `__version__ = "0.1.0"` (or `VERSION = ...`)
VERSION_LINE = re.compile(r"""^(?:__version__|VERSION)\s*(?::\s*str\s*)?=\s*(['"])(?P<version>[^'"]+)\1""",
                          re.MULTILINE)
CHANGELOG_SECTION = re.compile(r"^## \[(?P<name>[^\]]+)\]", re.MULTILINE)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def load(pyproject: Path) -> dict:
    with open(pyproject, "rb") as f:
        return tomllib.load(f)


def repository_version(pyproject: Path) -> Version:
    """The version hatch gives the distribution of `pyproject`: its `[tool.hatch.version]` path's."""
    config = load(pyproject)
    source = config.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    assert source, f"{rel(pyproject)}: no [tool.hatch.version] path (expected the package's _version.py)"
    version_file = pyproject.parent / source
    assert version_file.is_file(), f"{rel(pyproject)}: [tool.hatch.version] path {source!r} does not exist"
    match = VERSION_LINE.search(version_file.read_text(encoding="utf-8"))
    assert match, f"{rel(version_file)}: no `__version__ = \"X.Y.Z\"` line"
    return Version(match["version"])


def distributions() -> dict[str, Path]:
    """Canonical distribution name -> its pyproject.toml, for the seven in this repository."""
    return {canonicalize_name(load(p)["project"]["name"]): p for p in PYPROJECTS}


def requirements_of(pyproject: Path) -> list[tuple[str, str, Requirement]]:
    """`(where, as written, requirement)` for `dependencies` and every extra; `where` names the table."""
    project = load(pyproject)["project"]
    tables = {"dependencies": project.get("dependencies", []),
              **{f"optional-dependencies.{extra}": reqs
                 for extra, reqs in project.get("optional-dependencies", {}).items()}}
    return [(where, r, Requirement(r)) for where, reqs in tables.items() for r in reqs]


def test_the_repository_has_the_eight_distributions():
    names = set(distributions())
    assert len(PYPROJECTS) == 8 and {"trainstack", "trainstack-tensorpack"} <= names, sorted(names)


@pytest.mark.parametrize("pyproject", PYPROJECTS, ids=rel)
def test_every_pin_on_another_trainstack_distribution_admits_its_version(pyproject):
    ours = distributions()
    own = canonicalize_name(load(pyproject)["project"]["name"])
    checked, problems = 0, []
    for where, written, req in requirements_of(pyproject):
        name = canonicalize_name(req.name)
        if name not in ours or name == own:  # third-party, or an extra of itself (`all`)
            continue
        checked += 1
        version = repository_version(ours[name])
        version_file = rel(ours[name].parent / load(ours[name])["tool"]["hatch"]["version"]["path"])
        bounds = {spec.operator for spec in req.specifier}
        if not (bounds & {">=", ">", "~=", "=="} and bounds & {"<", "~=", "=="}):
            problems.append(f"{rel(pyproject)} [project] {where}: {written!r} is not a range: a trainstack "
                            f"distribution is pinned with a lower and an upper bound (for {version}: "
                            f"'{req.name}>={version.major}.{version.minor},<{version.major}.{version.minor + 1}'"
                            f"), see docs/releasing.md")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{rel(pyproject)} [project] {where}: {written!r} does not admit {req.name} "
                            f"{version}, the version in {version_file}")
    assert not problems, "\n".join(problems)
    if own != "trainstack-loop":  # the bottom layer depends on no other trainstack distribution
        assert checked, f"{rel(pyproject)}: no requirement on another trainstack distribution was found"


@pytest.mark.parametrize("pyproject", PYPROJECTS, ids=rel)
def test_the_changelog_names_the_current_version_as_the_newest_release(pyproject):
    changelog = pyproject.parent / "CHANGELOG.md"
    version = repository_version(pyproject)
    assert changelog.is_file(), f"{rel(changelog)} is missing (each distribution has one beside its pyproject.toml)"
    sections = [m["name"].strip() for m in CHANGELOG_SECTION.finditer(changelog.read_text(encoding="utf-8"))]
    assert sections[:1] == ["Unreleased"], (
        f"{rel(changelog)}: the first section must be '## [Unreleased]', found {sections[:1] or 'no section'}")
    released = sections[1:2]
    assert released, f"{rel(changelog)}: no released section after Unreleased; expected '## [{version}] - <date>'"
    assert Version(released[0]) == version, (
        f"{rel(changelog)}: the newest released section is {released[0]}, but the version in the "
        f"repository is {version}: add its section ('## [{version}] - <date>', see docs/releasing.md)")


def test_the_meta_package_depends_on_every_layer():
    ours = distributions()
    layers = {name for name, path in ours.items() if path != META_PYPROJECT}
    required = {canonicalize_name(req.name) for where, _, req in requirements_of(META_PYPROJECT)
                if where == "dependencies"}
    missing = sorted(layers - required)
    assert not missing, (f"{rel(META_PYPROJECT)} [project] dependencies lack {missing}: the meta-package "
                         f"installs every layer (pin each as its layers pin each other)")
