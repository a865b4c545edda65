"""Holding back C2 for the end of a run: the directive reaches the JVM and is taken back."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from controller.analytics import jit


def _c2_excluded(spark) -> bool:
    listing = jit.diagnostic_command(spark, "compilerDirectivesPrint")
    # Each directive prints its c1 and c2 blocks; only ours excludes anything.
    return "Exclude:true" in listing


def test_c2_is_excluded_inside_the_block_and_not_after(spark) -> None:
    assert not _c2_excluded(spark)
    with jit.c2_held_back(spark) as held:
        assert held
        assert _c2_excluded(spark)
    assert not _c2_excluded(spark)


def test_a_failure_is_logged_and_the_block_still_runs(
    spark, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: object) -> str:
        raise RuntimeError("no DiagnosticCommand MBean")

    monkeypatch.setattr(jit, "diagnostic_command", broken)
    ran = False
    with caplog.at_level(logging.WARNING, logger=jit.__name__), jit.c2_held_back(spark) as held:
        ran = True
    assert ran and not held
    assert "no DiagnosticCommand MBean" in caplog.text


def test_a_refused_directive_is_not_removed_later(
    spark, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def refusing(_spark: object, operation: str, *_args: str) -> str:
        calls.append(operation)
        return "Could not load file\n"

    monkeypatch.setattr(jit, "diagnostic_command", refusing)
    with caplog.at_level(logging.WARNING, logger=jit.__name__), jit.c2_held_back(spark) as held:
        pass
    assert not held
    # Removing would pop somebody else's directive (or none): only what was added goes.
    assert calls == ["compilerDirectivesAdd"]
    assert "Could not load file" in caplog.text


@pytest.mark.parametrize("hold_back", [True, False])
def test_the_job_holds_c2_back_after_its_pass_only_when_asked(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hold_back: bool
) -> None:
    from controller.analytics.generate import generate
    from controller.analytics.job import JobConfig, analyze

    seen: list[bool] = []
    real = jit.c2_held_back

    @contextmanager
    def spy(session) -> Iterator[bool]:
        with real(session) as held:
            seen.append(held and _c2_excluded(session))
            yield held

    monkeypatch.setattr(jit, "c2_held_back", spy)
    generate(2_000, tmp_path / "in" / "log.jsonl", clusters=1, seed=5, days=1)
    cfg = JobConfig(inputs=[str(tmp_path / "in")], output=str(tmp_path / "out"),
                    report=False, hold_back_c2=hold_back)
    result = analyze(spark, cfg)
    # Every line analysed (a malformed line of the noise may count under the file's name).
    assert sum(c.lines for c in result.clusters) == 2_000
    assert seen == ([True] if hold_back else [])
    assert not _c2_excluded(spark)  # given back when the job ends
