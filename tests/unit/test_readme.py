"""README.md's command synopses against the CLI itself: each documented form is one the CLI
accepts, and the options an operator needs on a real cluster are documented."""

from __future__ import annotations

import argparse
import re

import pytest

from controller.cli import topics_cmd
from controller.cli.main import build_parser
from tests.support import REPO

README = (REPO / "README.md").read_text()
# A value for each placeholder of the synopses.
PLACEHOLDERS = {"NAME": "t", "P": "2", "R": "1", "N": "1", "Z": "127.0.0.1:1", "H:P": "h:1"}


def synopsis_forms(command: str) -> list[str]:
    """The backticked forms of ``zk-controller <command>`` in README's command table."""
    forms: list[str] = []
    for line in README.splitlines():
        if line.startswith("| `zk-controller "):
            cell = line.split(" | ")[0]
            forms += [f for f in re.findall(r"`([^`]+)`", cell) if f.startswith(command)]
    assert forms, f"README documents no `{command}`"
    return forms


def as_argv(form: str) -> list[str]:
    """A synopsis as a command line: every optional [..] group included, placeholders filled."""
    words = form.replace("[", " ").replace("]", " ").split()[1:]  # without "zk-controller"
    return [PLACEHOLDERS.get(w, w) for w in words]


def test_every_topics_create_form_is_one_the_cli_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The synopsis used to show --partitions/--replication-factor and --replica-assignment
    together, a combination the CLI refuses (as kafka-topics.sh does)."""
    monkeypatch.setattr(topics_cmd, "run_admin", lambda args, action: 0)  # no ZooKeeper
    forms = synopsis_forms("zk-controller topics create")
    assert len(forms) == 2
    for form in forms:
        args = build_parser().parse_args(as_argv(form))
        assert args.func(args) == 0, form


def options_of(command: str) -> set[str]:
    """The option strings the CLI's parser for ``zk-controller <command>`` accepts."""
    parser = build_parser()
    for word in command.split()[1:]:
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return {option for action in parser._actions for option in action.option_strings}


@pytest.mark.parametrize(
    "command", ["zk-controller topics create", "zk-controller topics alter",
                "zk-controller reassign generate"],
)  # fmt: skip
def test_disable_rack_aware_is_documented_where_the_cli_needs_it(command: str) -> None:
    """These refuse to place replicas on a cluster where only some brokers have a rack unless
    given --disable-rack-aware; README did not mention the option."""
    assert "--disable-rack-aware" in options_of(command)
    assert any("--disable-rack-aware" in form for form in synopsis_forms(command))
    assert "not all brokers have rack information" in " ".join(README.split())


def test_the_feature_examples_say_the_brokers_must_advertise_the_feature() -> None:
    """`features upgrade --feature f=2` is refused on the `make run` stack, whose reference
    brokers advertise no features: README says how to start brokers that do, with the
    broker's own option spelling."""
    section = README[README.index("**Feature versions**") :]
    section = section[: section.index("```sh")]
    spelled = re.search(r"`zk-controller broker \.\.\. --feature\s+(f=\S+)`", section)
    assert spelled is not None, section
    args = build_parser().parse_args(
        ["broker", "--zookeeper", "z", "--broker-id", "1", "--feature", spelled.group(1)]
    )
    assert args.feature == [("f", (1, 3))]
    assert "make run" in section and "is not supported by any live broker" in section
