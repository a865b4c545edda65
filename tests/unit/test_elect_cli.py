"""``zk-controller elect --path-to-json-file``: Kafka's partitions file, read before any
ZooKeeper or controller is contacted; every problem is one error naming the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.admin.assignment import AdminError
from controller.cli.elect_cmd import partitions_from_json_file


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "partitions.json"
    path.write_text(text)
    return str(path)


def test_kafkas_file_in_file_order(tmp_path: Path) -> None:
    doc = {"partitions": [{"topic": "b", "partition": 2}, {"topic": "a", "partition": 0}]}
    assert partitions_from_json_file(write(tmp_path, json.dumps(doc))) == [("b", 2), ("a", 0)]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "is not valid JSON"),
        ("[]", 'expected {"partitions": [...]}'),
        ('{"partitions": []}', "at least one partition"),
        ('{"partitions": [7]}', "partitions[0]: 'topic'"),
        ('{"partitions": [{"topic": "", "partition": 0}]}', "partitions[0]: 'topic'"),
        ('{"partitions": [{"topic": "t", "partition": -1}]}', "partitions[0]: 'partition'"),
        ('{"partitions": [{"topic": "t", "partition": "0"}]}', "partitions[0]: 'partition'"),
        ('{"partitions": [{"topic": "t", "partition": true}]}', "partitions[0]: 'partition'"),
        (
            '{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}',
            "duplicate partition t-0",
        ),
    ],
)
def test_bad_files_are_named_errors(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(AdminError, match=None) as caught:
        partitions_from_json_file(write(tmp_path, text))
    assert words in str(caught.value)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(AdminError, match="cannot read"):
        partitions_from_json_file(str(tmp_path / "nope.json"))


@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "describe", "--no-such-option"],
        ["elect", "--all"],  # --type missing
        ["reassign", "verify", "--bogus"],
        ["topics", "nope"],
        # Kafka's --timeout is in ms: it must not pass for an abbreviation of --timeout-s.
        ["reassign", "execute", "--reassignment-json-file", "p.json", "--timeout", "10000"],
    ],
)
def test_admin_usage_errors_exit_1_like_kafkas_tools(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.cli.main import main

    assert main(argv) == 1
    assert "error:" in capsys.readouterr().err


def test_the_daemon_keeps_argparses_usage_exit_code() -> None:
    from controller.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(["run", "--no-such-option"])
    assert caught.value.code == 2
