from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config import (
    SETTINGS,
    SETTINGS_BY_NAME,
    ConfigError,
    ControllerConfig,
    HostPort,
    Setting,
    add_config_arguments,
    changed_settings,
    load_config,
    load_config_from_args,
    parse_host_port,
    parse_zookeeper_connect,
    render_config_reference,
    render_effective_config,
)

REQUIRED_ENV = {"ZKC_CONTROLLER_ID": "1", "ZKC_ZOOKEEPER_CONNECT": "zk1:2181"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "controller.toml"
    path.write_text(text)
    return path


def problems_of(exc: pytest.ExceptionInfo[ConfigError]) -> set[tuple[str, str]]:
    return {(p.source, p.key) for p in exc.value.problems}


def test_table_and_dataclass_agree() -> None:
    bookkeeping = {"sources", "file_values_overridden"}
    attrs = [f.name for f in dataclasses.fields(ControllerConfig) if f.name not in bookkeeping]
    assert attrs == [s.attr for s in SETTINGS]
    assert len(SETTINGS_BY_NAME) == len(SETTINGS)
    # Nested TOML tables can only express both names if neither is a dotted prefix of the other.
    names = [s.name for s in SETTINGS]
    assert not [(a, b) for a in names for b in names if b.startswith(a + ".")]


def test_defaults_match_kafka() -> None:
    cfg = load_config(env=REQUIRED_ENV)
    assert cfg.zookeeper_session_timeout_ms == 18000
    assert cfg.zookeeper_connection_timeout_ms == 18000  # null means the session timeout
    assert cfg.sources["zookeeper.connection.timeout.ms"].startswith("default")
    assert cfg.zookeeper_max_in_flight_requests == 10
    assert cfg.auto_leader_rebalance_enable is True
    assert cfg.leader_imbalance_check_interval_seconds == 300
    assert cfg.leader_imbalance_per_broker_percentage == 10
    assert cfg.unclean_leader_election_enable is False
    assert cfg.delete_topic_enable is True
    assert cfg.controller_socket_timeout_ms == 30000
    assert cfg.request_timeout_ms == 30000
    assert cfg.control_plane_listener_name is None
    assert cfg.controller_listener_name == "CONTROLLER"
    assert cfg.broker_listener_name == "CONTROLLER"
    assert cfg.log_level == "INFO"
    assert cfg.log_format == "auto"
    assert cfg.state_change_log_file == Path("state-change.log")
    assert cfg.embedded_zookeeper_data_dir == Path("var/zookeeper")
    assert cfg.metrics_listen == HostPort("127.0.0.1", 9309)
    assert cfg.grpc_listen == HostPort("127.0.0.1", 9095)


def test_dynamic_settings_are_marked() -> None:
    dynamic = {s.name for s in SETTINGS if s.dynamic}
    assert dynamic == {
        "log.level",
        "auto.leader.rebalance.enable",
        "unclean.leader.election.enable",
        "leader.imbalance.check.interval.seconds",
        "leader.imbalance.per.broker.percentage",
    }


def test_precedence_default_file_env_flag_with_sources(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        "controller.id" = 7
        "zookeeper.connect" = "file-zk:2181/kafka"
        "zookeeper.session.timeout.ms" = 1000
        "request.timeout.ms" = 1001
        "controller.socket.timeout.ms" = 1002
        """,
    )
    env = {"ZKC_REQUEST_TIMEOUT_MS": "2001", "ZKC_CONTROLLER_SOCKET_TIMEOUT_MS": "2002"}
    flags = {"controller.socket.timeout.ms": "3002"}
    cfg = load_config(path, env=env, flags=flags)

    assert cfg.zookeeper_max_in_flight_requests == 10  # default only
    assert cfg.zookeeper_session_timeout_ms == 1000  # file beats default
    assert cfg.request_timeout_ms == 2001  # env beats file
    assert cfg.controller_socket_timeout_ms == 3002  # flag beats env and file
    assert cfg.zookeeper_chroot == "/kafka"
    assert cfg.zookeeper_hosts == (HostPort("file-zk", 2181),)
    # The derived connection timeout follows the *effective* session timeout.
    assert cfg.zookeeper_connection_timeout_ms == 1000

    assert cfg.source("zookeeper.max.in.flight.requests") == "default"
    assert cfg.source("zookeeper.session.timeout.ms") == f"file {path}"
    assert cfg.source("request.timeout.ms") == "env ZKC_REQUEST_TIMEOUT_MS"
    assert cfg.source("controller.socket.timeout.ms") == "flag --controller-socket-timeout-ms"


def test_file_values_the_environment_overrides_are_recorded(tmp_path: Path) -> None:
    # An exported ZK_CONNECT (as the admin tools are used) silently retargets a daemon run
    # from a file: the daemon warns about what it records here.
    path = write(
        tmp_path,
        """
        "controller.id" = 7
        "zookeeper.connect" = "file-zk:2181/kafka"
        "request.timeout.ms" = 1001
        "controller.socket.timeout.ms" = 1002
        """,
    )
    env = {
        "ZK_CONNECT": "env-zk:2181/other",
        "ZKC_REQUEST_TIMEOUT_MS": "1001",  # the same value: nothing changes
        "ZKC_ZOOKEEPER_SESSION_TIMEOUT_MS": "9000",  # not in the file
    }
    cfg = load_config(path, env=env, flags={"controller.socket.timeout.ms": "3002"})
    assert cfg.zookeeper_connect == "env-zk:2181/other"
    assert dict(cfg.file_values_overridden) == {"zookeeper.connect": str(path)}
    assert dict(load_config(path, env={}).file_values_overridden) == {}


def test_nested_tables_are_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        controller.id = 3
        [zookeeper]
        connect = "a:1,b:2"
        session.timeout.ms = 6000
        [leader.imbalance]
        "per.broker.percentage" = 25
        """,
    )
    cfg = load_config(path, env={})
    assert cfg.controller_id == 3
    assert cfg.zookeeper_session_timeout_ms == 6000
    assert cfg.leader_imbalance_per_broker_percentage == 25
    assert cfg.zookeeper_hosts == (HostPort("a", 1), HostPort("b", 2))


def test_zk_connect_alias_and_zkc_wins() -> None:
    cfg = load_config(env={"ZKC_CONTROLLER_ID": "0", "ZK_CONNECT": "alias:2181"})
    assert cfg.zookeeper_connect == "alias:2181"
    assert cfg.source("zookeeper.connect") == "env ZK_CONNECT"
    cfg = load_config(
        env={"ZKC_CONTROLLER_ID": "0", "ZK_CONNECT": "alias:2181", "ZKC_ZOOKEEPER_CONNECT": "z:1"}
    )
    assert cfg.zookeeper_connect == "z:1"


def test_env_and_flag_parsing_of_types() -> None:
    env = {
        **REQUIRED_ENV,
        "ZKC_AUTO_LEADER_REBALANCE_ENABLE": "off",
        "ZKC_UNCLEAN_LEADER_ELECTION_ENABLE": "TRUE",
        "ZKC_LOG_LEVEL": "warn",
        "ZKC_METRICS_LISTEN": "[::1]:0",
        "ZKC_CONTROL_PLANE_LISTENER_NAME": "CONTROL_PLANE",
        "ZKC_LOG_DIR": "/var/log/zkc",
    }
    cfg = load_config(env=env, flags={"log.format": "JSON"})
    assert cfg.auto_leader_rebalance_enable is False
    assert cfg.unclean_leader_election_enable is True
    assert cfg.log_level == "WARNING"
    assert cfg.log_format == "json"
    assert cfg.metrics_listen == HostPort("::1", 0)
    assert cfg.broker_listener_name == "CONTROL_PLANE"
    assert cfg.state_change_log_file == Path("/var/log/zkc/state-change.log")


def test_absolute_state_change_log_file_ignores_log_dir() -> None:
    cfg = load_config(
        env={**REQUIRED_ENV, "ZKC_LOG_DIR": "/a", "ZKC_STATE_CHANGE_LOG_FILE": "/b/sc.log"}
    )
    assert cfg.state_change_log_file == Path("/b/sc.log")


def test_a_path_with_a_nul_character_is_refused_at_load(tmp_path: Path) -> None:
    # TOML's \u0000 escape gets one into a file; it would only fail at open(), as a traceback.
    path = write(tmp_path, 'controller.id = 1\nzookeeper.connect = "zk:2181"\n'
                           'log.dir = "/tmp/a\\u0000b"\n')  # fmt: skip
    with pytest.raises(ConfigError) as exc:
        load_config(path, env={})
    assert problems_of(exc) == {(f"file {path}", "log.dir")}
    assert "cannot contain a NUL character" in str(exc.value)


def test_every_problem_is_reported_with_its_source(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        "zookeeper.connect" = "zk:2181//bad/"
        "zookeeper.sesion.timeout.ms" = 1
        "request.timeout.ms" = "30"
        "delete.topic.enable" = 1
        [leader.imbalance]
        "check.interval.seconds" = 0
        """,
    )
    env = {
        "ZKC_CONTROLLER_ID": "x",
        "ZKC_GRPC_LISTEN": "nohost",
        "ZKC_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE": "-1",
        "ZKC_TYPO": "1",
    }
    flags = {"metrics.listen": "host:70000", "log.format": "xml"}
    with pytest.raises(ConfigError) as exc:
        load_config(path, env=env, flags=flags)
    f = f"file {path}"
    assert problems_of(exc) == {
        (f, "zookeeper.connect"),
        (f, "zookeeper.sesion.timeout.ms"),
        (f, "request.timeout.ms"),
        (f, "delete.topic.enable"),
        (f, "leader.imbalance.check.interval.seconds"),
        ("env ZKC_CONTROLLER_ID", "controller.id"),
        ("env ZKC_GRPC_LISTEN", "grpc.listen"),
        (
            "env ZKC_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE",
            "leader.imbalance.per.broker.percentage",
        ),
        ("env ZKC_TYPO", "ZKC_TYPO"),
        ("flag --metrics-listen", "metrics.listen"),
        ("flag --log-format", "log.format"),
    }
    text = str(exc.value)
    assert "11 configuration problem(s)" in text
    assert "unknown setting" in text
    assert "below the minimum 1" in text
    assert "below the minimum 0" in text
    # As in Kafka, a percentage of 100 or more is allowed (it never triggers a rebalance).
    assert load_config(env={"ZKC_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE": "150"},
                       overrides={"controller.id": 0, "zookeeper.connect": "zk:2181"}
                       ).leader_imbalance_per_broker_percentage == 150  # fmt: skip


def test_a_problem_names_its_setting_once() -> None:
    # "env ZKC_TYPO: ZKC_TYPO: unknown setting", and the credentials parser's own
    # "zookeeper.auth.credentials.value: ..." after the key, read as a stutter.
    env = {"ZKC_CONTROLER_ID": "1", "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE": "no-colon",
           "ZKC_ZOOKEEPER_AUTH_SCHEME": "digest"}  # fmt: skip
    with pytest.raises(ConfigError) as exc:
        load_config(env=env, overrides={"controller.id": 0, "zookeeper.connect": "zk:2181"})
    lines = str(exc.value).splitlines()[1:]
    assert lines == [
        "  - env ZKC_CONTROLER_ID: unknown setting",
        "  - env ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE: zookeeper.auth.credentials.value: "
        "expected user:password on the first line",
    ]


@pytest.mark.parametrize(
    ("grpc", "metrics", "clash"),
    [
        ("127.0.0.1:9095", "127.0.0.1:9095", True),
        ("127.0.0.1:9095", "0.0.0.0:9095", True),  # was only caught at bind: exit 1, retried
        ("0.0.0.0:9095", "10.0.0.5:9095", True),
        ("[::]:9095", "127.0.0.1:9095", True),
        (":9095", "[::1]:9095", True),
        ("0.0.0.0:9095", "[::1]:9095", False),  # IPv4 wildcard, IPv6 host: no contention
        ("127.0.0.1:9095", "127.0.0.2:9095", False),
        ("0.0.0.0:9095", "0.0.0.0:9309", False),
        ("0.0.0.0:0", "0.0.0.0:0", False),  # ephemeral ports never clash
    ],
)
def test_listeners_that_contend_for_a_port_are_a_configuration_problem(
    grpc: str, metrics: str, clash: bool
) -> None:
    overrides = {"controller.id": 0, "zookeeper.connect": "zk:2181"}
    flags = {"grpc.listen": grpc, "metrics.listen": metrics}
    if not clash:
        load_config(env={}, flags=flags, overrides=overrides)
        return
    with pytest.raises(ConfigError) as exc:
        load_config(env={}, flags=flags, overrides=overrides)
    assert problems_of(exc) == {("flag --metrics-listen", "metrics.listen")}
    assert "metrics.listen: same " in str(exc.value) and "grpc.listen (" in str(exc.value)


def test_missing_required_settings() -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(env={})
    assert problems_of(exc) == {("config", "controller.id"), ("config", "zookeeper.connect")}
    assert "ZKC_CONTROLLER_ID" in str(exc.value) and "--controller-id" in str(exc.value)


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path / "absent.toml", env=REQUIRED_ENV)
    # The file as a whole: no setting named (it read "file F: -: cannot read").
    assert f"file {tmp_path / 'absent.toml'}: cannot read: " in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, "controller.id = = 1"), env=REQUIRED_ENV)
    assert ": invalid TOML: " in str(exc.value) and ": -: " not in str(exc.value)
    # Kafka's properties syntax: the error says what the file should look like.
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, "zookeeper.connect=zk1:2181\n"), env=REQUIRED_ENV)
    assert 'strings quoted: zookeeper.connect = "zk1:2181/kafka"' in str(exc.value)


def test_a_file_that_is_not_utf8_is_a_problem_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.toml"
    bad.write_bytes('controller.id = 1\nzookeeper.connect = "zk:2181"\n# site: Z\xfcrich\n'
                    .encode("latin-1"))  # fmt: skip
    with pytest.raises(ConfigError) as exc:
        load_config(bad, env={})
    # One problem, naming the file and the byte; not "required" for settings the file sets.
    assert problems_of(exc) == {(f"file {bad}", "-")}
    assert "not UTF-8: byte 0xfc at offset 57" in str(exc.value)


def test_an_unreadable_file_does_not_also_report_its_settings_as_missing(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path / "absent.toml", env={})
    assert problems_of(exc) == {(f"file {tmp_path / 'absent.toml'}", "-")}
    # A readable file that lacks a required setting still says so.
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, "controller.id = 1\n"), env={})
    assert problems_of(exc) == {("config", "zookeeper.connect")}


def test_same_listen_address_is_rejected() -> None:
    env = {**REQUIRED_ENV, "ZKC_GRPC_LISTEN": "127.0.0.1:9000", "ZKC_METRICS_LISTEN": ":9000"}
    with pytest.raises(ConfigError) as exc:  # "" binds every interface, 127.0.0.1 too
        load_config(env=env)
    load_config(env={**env, "ZKC_METRICS_LISTEN": "127.0.0.2:9000"})  # different hosts
    with pytest.raises(ConfigError) as exc:
        load_config(env={**env, "ZKC_METRICS_LISTEN": "127.0.0.1:9000"})
    assert problems_of(exc) == {("env ZKC_METRICS_LISTEN", "metrics.listen")}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("h:1", HostPort("h", 1)),
        (":0", HostPort("", 0)),
        ("[fe80::1]:9", HostPort("fe80::1", 9)),
        ("10.0.0.1:65535", HostPort("10.0.0.1", 65535)),
    ],
)
def test_parse_host_port(text: str, expected: HostPort) -> None:
    assert parse_host_port(text) == expected
    assert parse_host_port(str(expected)) == expected


@pytest.mark.parametrize("text", ["h", "h:", "h:x", "h:-1", "::1:9", "[::1", "h h:1", "h:65536"])
def test_parse_host_port_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_host_port(text)


def test_parse_zookeeper_connect() -> None:
    assert parse_zookeeper_connect("a,b:2182/x/y") == (
        (HostPort("a", 2181), HostPort("b", 2182)),
        "/x/y",
    )
    assert parse_zookeeper_connect("a:1/") == ((HostPort("a", 1),), None)
    for bad in ("", "/chroot", "a:1,,b:2", "a:1/x/", "a:0"):
        with pytest.raises(ValueError):
            parse_zookeeper_connect(bad)


@pytest.mark.parametrize(
    ("chroot", "problem"),
    [
        ("/k/.", "relative segment '.'"),
        ("/k/../x", "relative segment '..'"),
        ("/k\x01", "character '\\x01'"),
        ("/k\x85x", "character '\\x85'"),
        ("/k\udcff", "character '\\udcff'"),  # a non-UTF-8 byte of argv or the environment
        ("/k\U0001f600", "character '\\U0001f600'"),  # a surrogate pair in Java: refused
        ("/k\uffff", "character '\\uffff'"),
    ],
)
def test_a_chroot_zookeeper_refuses_is_a_config_error(chroot: str, problem: str) -> None:
    # Accepted before: kazoo's constructor raised a bare ValueError at start ('.', '..'), the
    # server answered BadArguments with no message, or kazoo's connection thread died
    # encoding the path (exit 1, "session lost").
    with pytest.raises(ConfigError) as raised:
        load_config(env={**REQUIRED_ENV, "ZKC_ZOOKEEPER_CONNECT": f"zk1:2181{chroot}"})
    (only,) = raised.value.problems
    assert only.key == "zookeeper.connect" and problem in only.message


@pytest.mark.parametrize(
    ("connect", "canonical"),
    [
        ("zk1:2181 ,zk2:2181", "zk1:2181,zk2:2181"),
        ("zk1:2181,zk2:2181 /kafka", "zk1:2181,zk2:2181/kafka"),
        (" zk1 , zk2:2182/", "zk1:2181,zk2:2182"),
        ("[::1]:2181/kafka", "[::1]:2181/kafka"),
    ],
)
def test_a_connect_string_is_kept_in_the_form_kazoo_reads(connect: str, canonical: str) -> None:
    # kazoo parses the string again itself: before, a space this parser tolerated passed
    # --validate-config and then killed `run` with a bare ValueError from KazooClient.
    from kazoo.client import KazooClient

    cfg = load_config(env={**REQUIRED_ENV, "ZKC_ZOOKEEPER_CONNECT": connect})
    assert cfg.zookeeper_connect == canonical
    KazooClient(hosts=cfg.zookeeper_connect)  # raises ValueError on what kazoo refuses


def test_a_port_in_non_ascii_digits_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(env={**REQUIRED_ENV, "ZKC_ZOOKEEPER_CONNECT": "zk1:\u0662\u0661\u0668\u0661"})
    (only,) = raised.value.problems
    assert only.key == "zookeeper.connect" and "is not a number" in only.message


def test_a_chroot_with_text_zookeeper_takes_is_accepted() -> None:
    cfg = load_config(env={**REQUIRED_ENV, "ZKC_ZOOKEEPER_CONNECT": "zk1:2181/kafka-é.prod_1"})
    assert cfg.zookeeper_chroot == "/kafka-é.prod_1"


def test_cli_flags_through_argparse(tmp_path: Path) -> None:
    path = write(tmp_path, '"controller.id" = 4\n"zookeeper.connect" = "f:1"\n')
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(
        ["--config", str(path), "--zookeeper-connect", "flag:2181", "--log-level", "debug"]
    )
    cfg = load_config_from_args(args, env={"ZKC_ZOOKEEPER_CONNECT": "env:2181"})
    assert cfg.controller_id == 4
    assert cfg.zookeeper_connect == "flag:2181"
    assert cfg.log_level == "DEBUG"
    assert cfg.source("log.level") == "flag --log-level"


def test_render_effective_config_is_toml_with_sources(tmp_path: Path) -> None:
    cfg = load_config(
        write(tmp_path, '"controller.id" = 2\n'),
        env={"ZKC_ZOOKEEPER_CONNECT": "zk:2181", "ZKC_LOG_DIR": "/logs"},
        flags={"auto.leader.rebalance.enable": "false"},
    )
    text = render_effective_config(cfg)
    lines = {line.split()[0].lstrip("#"): line for line in text.splitlines()}
    assert lines["controller.id"].endswith(f"# file {tmp_path / 'controller.toml'}")
    assert lines["auto.leader.rebalance.enable"].endswith("# flag --auto-leader-rebalance-enable")
    assert lines["request.timeout.ms"].endswith("# default")
    assert "control.plane.listener.name is unset" in text
    # Round trip: the rendering loads back to the same configuration.
    reparsed = tomllib.loads(text)
    assert reparsed["controller"]["id"] == 2
    again = load_config(write(tmp_path, text), env={})
    assert again == cfg
    assert changed_settings(cfg, again) == ()


@pytest.mark.parametrize(
    ("log_dir", "scl_file"),
    [("var/log", None), ("var/log", "sub/sc.log"), ("/var/log/zkc", None), (".", "/abs/sc.log"),
     ("var/log", "/var/log/elsewhere.log")],
)  # fmt: skip
def test_rendered_config_loads_back_to_the_same_state_change_log_file(
    tmp_path: Path, log_dir: str, scl_file: str | None
) -> None:
    """Loading joins a relative state.change.log.file to log.dir; the rendering must not give
    the joined path to be joined again (a relative log.dir moved the log to var/log/var/log)."""
    env = {**REQUIRED_ENV, "ZKC_LOG_DIR": log_dir}
    if scl_file is not None:
        env["ZKC_STATE_CHANGE_LOG_FILE"] = scl_file
    cfg = load_config(env=env)
    again = load_config(write(tmp_path, render_effective_config(cfg)), env={})
    assert again.state_change_log_file == cfg.state_change_log_file
    assert changed_settings(cfg, again) == ()


def test_changed_settings() -> None:
    a = load_config(env=REQUIRED_ENV)
    b = load_config(env={**REQUIRED_ENV, "ZKC_LOG_LEVEL": "DEBUG", "ZKC_DELETE_TOPIC_ENABLE": "0"})
    changed = changed_settings(a, b)
    assert {s.name for s in changed} == {"log.level", "delete.topic.enable"}
    assert [s.dynamic for s in changed] == [False, True]  # table order: delete.topic first


def test_markdown_reference_lists_every_setting() -> None:
    text = render_config_reference()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(SETTINGS)
    for s, row in zip(SETTINGS, rows, strict=True):
        assert row.startswith(f"| `{s.name}` |")
        assert f"`{s.env}`" in row
        assert (f"`{s.flag}`" not in row) if s.secret else (f"`{s.flag}`" in row)
    assert "| `zookeeper.session.timeout.ms` | int (1..2147483647) | `18000` | no | yes |" in text


@pytest.mark.parametrize(
    "setting", [s for s in SETTINGS if s.default is not None], ids=lambda s: s.name
)
def test_defaults_have_the_parsed_type(setting: Setting) -> None:
    # A default must look exactly like a parsed value, or defaults and overrides differ in type.
    parsed = setting.coerce(str(setting.default), textual=True)
    assert parsed == setting.default
    assert type(parsed) is type(setting.default)


def test_run_without_zookeeper_fails_unless_the_embedded_one_is_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A production host whose configuration lost zookeeper.connect must not quietly become
    the controller of an empty local cluster."""
    from controller.cli.main import main

    for name in list(os.environ):
        if name == "ZK_CONNECT" or name.startswith("ZKC_"):
            monkeypatch.delenv(name)
    assert main(["run", "--controller-id", "0"]) == 2
    err = capsys.readouterr().err
    assert "zookeeper.connect" in err and "--embedded-zookeeper" in err
    # Both at once is a mistake too (which one was meant?).
    both = ["run", "--controller-id", "0", "--zookeeper", "zk:2181", "--embedded-zookeeper"]
    assert main(both) == 2
    assert "drop one of them" in capsys.readouterr().err
    # A malformed connect string is reported, not replaced by the embedded ZooKeeper (which
    # started, and made this the controller of an empty cluster), and without the hint.
    bad = ["run", "--controller-id", "0", "--zookeeper", "zk1:2181/kafka//x"]
    assert main([*bad, "--embedded-zookeeper"]) == 2
    err = capsys.readouterr().err
    assert "zookeeper.connect" in err and "--embedded-zookeeper" not in err
    assert "started embedded ZooKeeper" not in err
    monkeypatch.setenv("ZK_CONNECT", "zk1:2181/kafka//x")  # was a traceback, exit 1
    assert main(["run", "--controller-id", "0", "--embedded-zookeeper"]) == 2
    assert "env ZK_CONNECT" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    """``main(["run", ...])`` ignores SIGHUP for the process it runs in: not pytest's."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_run_ignores_sighup_before_it_loads_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's SIGHUP handler (reload) exists only once it starts; until then a SIGHUP
    killed the process (exit 129, a clean stop to systemd's Restart=on-failure)."""
    import controller.cli.main as cli_main

    seen = []

    def parser_spy() -> argparse.ArgumentParser:
        seen.append(signal.getsignal(signal.SIGHUP))
        raise SystemExit(2)

    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    monkeypatch.setattr(cli_main, "build_parser", parser_spy)
    with pytest.raises(SystemExit):
        cli_main.main(["run", "--controller-id", "0"])
    assert seen == [signal.SIG_IGN]


def test_validate_config_reads_the_security_files_run_would_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # operations.md: "--validate-config ... prints every problem at once". A missing
    # certificate passed it (exit 0) and stopped `run` only.
    from controller.cli.main import main

    for name in list(os.environ):
        if name == "ZK_CONNECT" or name.startswith("ZKC_"):
            monkeypatch.delenv(name)
    base = ["run", "--validate-config", "--controller-id", "0", "--zookeeper", "zk:2181"]
    assert main(base) == 0
    capsys.readouterr()
    missing = tmp_path / "absent.pem"
    tls = ["--grpc-tls-cert-file", str(missing), "--grpc-tls-key-file", str(missing)]
    assert main([*base, *tls]) == 2
    err = capsys.readouterr().err
    assert err.startswith("security configuration:") and "absent.pem" in err
    monkeypatch.setenv("ZKC_ZOOKEEPER_AUTH_SCHEME", "digest")
    monkeypatch.setenv("ZKC_ZOOKEEPER_AUTH_CREDENTIALS_FILE", str(tmp_path / "no-creds"))
    assert main(base) == 2
    assert "no-creds" in capsys.readouterr().err


def test_secrets_have_no_command_line_flag() -> None:
    """A flag's value sits in argv, which `ps` shows to every user of the host."""
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--zookeeper-auth-credentials-value", "user:secret"])
    secrets = [s for s in SETTINGS if s.secret]
    assert secrets and all(s.flag not in parser.format_help() for s in secrets)


def test_a_malformed_secret_is_reported_without_its_value(tmp_path: Path) -> None:
    """A mistyped secret (a TOML integer) is named with its source, never echoed."""
    path = write(tmp_path, '"zookeeper.auth.credentials.value" = 123456789\n')
    with pytest.raises(ConfigError) as exc:
        load_config(path, env=REQUIRED_ENV)
    assert problems_of(exc) == {(f"file {path}", "zookeeper.auth.credentials.value")}
    text = str(exc.value)
    assert "123456789" not in text
    assert "secret" in text and "int" in text


@pytest.mark.parametrize(
    "name",
    ["controller.id", "zookeeper.session.timeout.ms", "request.timeout.ms",
     "leader.imbalance.per.broker.percentage"],
)  # fmt: skip
def test_kafka_int_settings_stop_at_int32(name: str) -> None:
    # Kafka's INT settings end up in int32 fields (/controller's brokerid, kazoo's
    # ConnectRequest): one past the range is refused at load, naming the key.
    base = {"ZKC_CONTROLLER_ID": "0", "ZKC_ZOOKEEPER_CONNECT": "zk:2181"}
    env = SETTINGS_BY_NAME[name].env
    config = load_config(env={**base, env: str(2**31 - 1)})
    assert getattr(config, SETTINGS_BY_NAME[name].attr) == 2**31 - 1
    with pytest.raises(ConfigError) as exc:
        load_config(env={**base, env: str(2**31)})
    assert problems_of(exc) == {(f"env {env}", name)}
    assert "above the maximum 2147483647" in str(exc.value)


def test_state_change_log_max_bytes_is_not_an_int32() -> None:
    base = {"controller.id": 0, "zookeeper.connect": "zk:2181"}
    assert load_config(overrides={**base, "state.change.log.max.bytes": 2**33}
                       ).state_change_log_max_bytes == 2**33  # fmt: skip


def test_listener_names_are_upper_cased_as_kafka_normalises_them() -> None:
    """Registrations carry upper-case listener names (Kafka's ListenerName.normalised); a
    lower-case setting used to match no endpoint (no live_leaders, no controller channel)."""
    cfg = load_config(
        flags={
            "controller.id": "1",
            "zookeeper.connect": "localhost:2181",
            "inter.broker.listener.name": "internal",
            "control.plane.listener.name": "control_plane",
            "controller.listener.name": "Controller",
        },
        env={},
    )
    assert cfg.inter_broker_listener_name == "INTERNAL"
    assert cfg.broker_listener_name == "CONTROL_PLANE"
    assert cfg.controller_listener_name == "CONTROLLER"
