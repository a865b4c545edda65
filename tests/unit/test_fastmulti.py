"""Multis serialized in one go (controller.zk.fastmulti) are byte for byte kazoo's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kazoo.protocol import serialization as ks
from kazoo.protocol.paths import _prefix_root
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from controller.zk import fastmulti
from controller.zk.port import Check, Create, Delete, SetData

segment = st.text("abcxyz._-09é", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
path = st.lists(segment, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
version = st.integers(-1, 2**31 - 1)
data = st.binary(max_size=40)
op = st.one_of(
    st.builds(SetData, path, data, version),
    st.builds(Check, path, version),
    st.builds(Delete, path, version),
    st.builds(Create, path, st.one_of(st.none(), data), st.booleans()),
)


def kazoo_bytes(ops: list, chroot: str, acl: list) -> bytes:
    kops = []
    for o in ops:
        p = _prefix_root(chroot, o.path)
        if isinstance(o, SetData):
            kops.append(ks.SetData(p, o.data, o.version))
        elif isinstance(o, Check):
            kops.append(ks.CheckVersion(p, o.version))
        elif isinstance(o, Delete):
            kops.append(ks.Delete(p, o.version))
        else:
            # None is ZooKeeper's null (length -1), as Kafka creates its data-less znodes.
            kops.append(ks.Create(p, o.data, acl, 1 if o.ephemeral else 0))
    return bytes(ks.Transaction(kops).serialize())


@given(st.lists(op, min_size=1, max_size=8), st.sampled_from(["", "/chroot", "/a/b"]))
def test_same_bytes_as_kazoo(ops: list, chroot: str) -> None:
    assert fastmulti.encode(ops, chroot, None) == kazoo_bytes(ops, chroot, OPEN_ACL_UNSAFE)


def test_default_acl_is_used_for_creates() -> None:
    acl = [make_digest_acl("user", "secret", all=True)]
    ops = [Create("/x", b"1"), SetData("/x", b"2", 0)]
    assert fastmulti.encode(ops, "", acl) == kazoo_bytes(ops, "", acl)


def test_non_canonical_paths_and_sequential_creates_are_left_to_kazoo() -> None:
    for bad in ("/", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a/.", "a/b", "/a/.."):
        assert fastmulti.encode([SetData(bad, b"")], "", None) is None
    assert fastmulti.encode([Create("/seq-", b"", sequential=True)], "", None) is None
    assert fastmulti.encode([SetData("/.hidden", b"")], "", None) is not None



def test_a_create_without_data_sends_null_not_empty() -> None:
    null, empty = (fastmulti.encode([Create("/x", d)], "", None) for d in (None, b""))
    assert null is not None and empty is not None and null != empty
    assert null == kazoo_bytes([Create("/x", None)], "", OPEN_ACL_UNSAFE)


def test_acl_for_gives_each_create_its_own_acl() -> None:
    secret = [make_digest_acl("user", "secret", all=True)]
    ops = [Create("/a", b"1"), Create("/config/users", None), SetData("/a", b"2", 0)]

    def acl_for(path: str) -> list:
        return secret if path.startswith("/config/users") else OPEN_ACL_UNSAFE

    expected = ks.Transaction(
        [
            ks.Create("/a", b"1", OPEN_ACL_UNSAFE, 0),
            ks.Create("/config/users", None, secret, 0),
            ks.SetData("/a", b"2", 0),
        ]
    ).serialize()
    assert fastmulti.encode(ops, "", None, acl_for=acl_for) == bytes(expected)
