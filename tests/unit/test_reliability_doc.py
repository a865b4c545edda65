"""docs/reliability.md stays true: every test it cites exists, and every malformed-input test
(and every simulation-found race) is cited, so the catalogue cannot silently fall behind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
MALFORMED = "tests/unit/test_malformed_input.py"
RPCS = "tests/unit/test_malformed_rpcs.py"
LIVE = "tests/integration/test_malformed_live.py"
ALIASES = {"T": MALFORMED, "R": RPCS}
CITATION = re.compile(r"`((?:tests/[\w/]+\.py)|T|R)::(\w+)(?:::(\w+))?(?:\[[^\]]*\])?`")


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name.startswith(
            ("test_", "Test")
        ):
            names.add(node.name)
    return names


def citations() -> list[tuple[str, str]]:
    out = []
    text = DOC.read_text()
    for match in CITATION.finditer(text):
        file = ALIASES.get(match.group(1), match.group(1))
        out.append((file, match.group(3) or match.group(2)))
    # A bare name after a citation in the same cell ("same, and `test_x`") belongs to the file
    # cited just before it.
    for line in text.splitlines():
        files = [m.group(1) for m in CITATION.finditer(line)]
        for bare in re.findall(r"(?<![:\w])`(test_\w+)`", line):
            if files:
                out.append((ALIASES.get(files[-1], files[-1]), bare))
    return out


def test_every_cited_test_exists() -> None:
    missing = [
        f"{file}::{name}"
        for file, name in citations()
        if name not in _test_functions(ROOT / file)
    ]
    assert citations() and not missing, missing


def test_every_malformed_input_test_is_catalogued() -> None:
    for catalogued in (MALFORMED, RPCS, LIVE):
        cited = {name for file, name in citations() if file == catalogued}
        assert _test_functions(ROOT / catalogued) - cited == set(), catalogued


def test_every_simulation_found_race_is_catalogued() -> None:
    cited = {name for file, name in citations() if file == "tests/unit/test_sim_found_races.py"}
    found = _test_functions(ROOT / "tests/unit/test_sim_found_races.py")
    # Races whose fix is listed in the simulation table are cited there or in the catalogue.
    text = DOC.read_text()
    uncited = {name for name in found - cited if name not in text}
    assert uncited == set()


def test_the_chaos_section_is_there_for_the_chaos_run() -> None:
    assert "\n## Chaos\n" in DOC.read_text()
