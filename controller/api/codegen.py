"""Regenerate the gRPC/protobuf Python code from ``proto/`` reproducibly.

    python -m controller.api.codegen           # rewrite controller/api/v1/*_pb2*.py{,i}
    python -m controller.api.codegen --check   # exit 1 if the committed code is stale

The ``.proto`` files live at ``proto/controller/api/v1/`` so that, with ``-Iproto``, grpc_tools
writes imports as ``from controller.api.v1 import common_pb2`` (the generated import path is
the proto's path relative to ``-I``; see engineering notes §4.3). Never patch the output.

The output depends on the grpcio-tools version (it embeds the protobuf gencode version and a
grpcio runtime check), so generation refuses to run with any other version than ``PINNED``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# Keep equal to the grpcio-tools pin in pyproject.toml, and grpcio/protobuf runtime lower
# bounds at or above what this version generates for.
PINNED = "1.85.1"

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO_ROOT / "proto"
PACKAGE_DIR = Path("controller/api/v1")  # relative to both PROTO_ROOT and REPO_ROOT
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def proto_files() -> list[Path]:
    """The .proto files, relative to ``PROTO_ROOT``, in a stable order."""
    return sorted(p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / PACKAGE_DIR).glob("*.proto"))


def _is_generated(path: Path) -> bool:
    return path.name.endswith(GENERATED_SUFFIXES)


def generated_files(root: Path) -> dict[str, bytes]:
    """Generated files under ``root/PACKAGE_DIR``, by file name."""
    directory = root / PACKAGE_DIR
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if _is_generated(p)}


def generate(out_root: Path) -> None:
    """Run protoc on every proto file, writing under ``out_root/controller/api/v1``."""
    from grpc_tools import protoc  # a test-time dependency only; imported lazily

    files = proto_files()
    if not files:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / PACKAGE_DIR}")
    (out_root / PACKAGE_DIR).mkdir(parents=True, exist_ok=True)
    # grpc_tools ships the well-known types (google/protobuf/*.proto) next to its module.
    well_known = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *(str(f) for f in files),
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise SystemExit(f"protoc failed with exit code {rc}")


def _check_tool_version() -> None:
    try:
        installed = importlib.metadata.version("grpcio-tools")
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(
            f"grpcio-tools is not installed; install grpcio-tools=={PINNED} (the test extra)"
        ) from None
    if installed != PINNED:
        raise SystemExit(
            f"grpcio-tools {installed} is installed but the code is generated with {PINNED}; "
            f"install grpcio-tools=={PINNED}"
        )


def diff(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[str]:
    """Human-readable differences between fresh (``expected``) and committed (``actual``) code."""
    problems: list[str] = []
    for name in sorted(expected.keys() | actual.keys()):
        path = PACKAGE_DIR / name
        if name not in actual:
            problems.append(f"missing: {path}")
        elif name not in expected:
            problems.append(f"not generated from any .proto (delete it): {path}")
        elif expected[name] != actual[name]:
            lines = difflib.unified_diff(
                actual[name].decode().splitlines(),
                expected[name].decode().splitlines(),
                f"committed/{path}",
                f"generated/{path}",
                lineterm="",
                n=1,
            )
            # Serialized descriptors are single huge lines: show their starts only.
            problems.append("\n".join(line[:160] for line in list(lines)[:40]))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.api.codegen", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="generate into a temporary directory and fail if the committed code differs",
    )
    args = parser.parse_args(argv)
    _check_tool_version()
    with tempfile.TemporaryDirectory(prefix="zkc-codegen-") as tmp:
        fresh_root = Path(tmp)
        generate(fresh_root)
        fresh = generated_files(fresh_root)
        committed = generated_files(REPO_ROOT)
        if args.check:
            problems = diff(fresh, committed)
            if problems:
                print("generated gRPC code is stale; run `make proto`:", file=sys.stderr)
                for problem in problems:
                    print(problem, file=sys.stderr)
                return 1
            print(f"generated code is up to date ({len(fresh)} files)")
            return 0
        target = REPO_ROOT / PACKAGE_DIR
        for name in committed.keys() - fresh.keys():
            (target / name).unlink()
        for name in fresh:
            shutil.copyfile(fresh_root / PACKAGE_DIR / name, target / name)
        print(f"generated {len(fresh)} files into {PACKAGE_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
