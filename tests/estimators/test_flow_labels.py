# SPDX-License-Identifier: BSD-2-Clause
"""A flow's name (``host_sw.estimators.flows.flow_label`` and ``flow_labels``) is its
5-tuple as ``ipaddress`` writes its addresses: dotted decimal without leading zeros for
IPv4, the shortened form in brackets for IPv6; the flow hash where the window holds no
IP header."""

import ipaddress
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings, strategies as st

from host_sw.contracts.hashing import FrameClass
from host_sw.estimators.flows import flow_label, flow_labels

_NAMES = {6: "tcp", 17: "udp", 1: "icmp", 132: "sctp", 58: "icmpv6"}


def _expected(w: bytes, cls: int) -> str:
    """The name written with ``ipaddress`` objects, field by field."""
    if cls == FrameClass.IPV4:
        proto, a, b, ports, fmt = (w[23], ipaddress.IPv4Address(w[26:30]),
                                   ipaddress.IPv4Address(w[30:34]), w[34:38], "{}:{}")
    else:
        proto, a, b, ports, fmt = (w[20], ipaddress.IPv6Address(w[22:38]),
                                   ipaddress.IPv6Address(w[38:54]), w[54:58], "[{}]:{}")
    name = _NAMES.get(proto, str(proto))
    if proto not in (6, 17, 132):
        return f"{name} {a} > {b}"
    sport, dport = int.from_bytes(ports[:2], "big"), int.from_bytes(ports[2:], "big")
    return f"{name} {fmt.format(a, sport)} > {fmt.format(b, dport)}"


_BYTE = st.sampled_from([0, 1, 9, 10, 99, 100, 199, 255]) | st.integers(0, 255)


@settings(max_examples=300, deadline=None)
@given(body=st.lists(_BYTE, min_size=64, max_size=64),
       proto=st.sampled_from([6, 17, 1, 132, 58, 47]),
       cls=st.sampled_from([FrameClass.IPV4, FrameClass.IPV6]))
def test_a_flow_is_named_as_ipaddress_writes_it(body, proto, cls):
    w = bytearray(body)
    w[23 if cls == FrameClass.IPV4 else 20] = proto
    window = np.frombuffer(bytes(w), np.uint8)
    want = _expected(bytes(w), int(cls))
    assert flow_label(window, int(cls)) == want
    table = SimpleNamespace(hashes=[np.array([0x1234], np.uint64)], windows=[window],
                            classes=[int(cls)])
    assert flow_labels(table) == [want]


def test_a_window_without_an_ip_header_is_named_by_its_flow_hash():
    window = np.zeros(64, np.uint8)
    assert flow_label(window, int(FrameClass.NON_IP)) == ""
    table = SimpleNamespace(hashes=[np.array([0xBEEF], np.uint64)], windows=[window],
                            classes=[int(FrameClass.NON_IP)])
    assert flow_labels(table) == ["hash 0x0000beef"]


@settings(max_examples=60, deadline=None)
@given(flows=st.lists(st.tuples(st.lists(_BYTE, min_size=64, max_size=64),
                                st.sampled_from([6, 17, 1, 132, 58, 47]),
                                st.sampled_from([FrameClass.IPV4, FrameClass.IPV6,
                                                 FrameClass.NON_IP])),
                      min_size=1, max_size=40))
def test_a_table_of_flows_is_named_as_each_flow_alone(flows):
    """:func:`flow_labels` names a table's flows (IPv4 ones all at once) as
    :func:`flow_label` names each, and by its hash where that gives no name."""
    windows, classes, want = [], [], []
    for k, (body, proto, cls) in enumerate(flows):
        w = bytearray(body)
        w[23 if cls == FrameClass.IPV4 else 20] = proto
        windows.append(np.frombuffer(bytes(w), np.uint8))
        classes.append(int(cls))
        want.append(_expected(bytes(w), int(cls)) if cls != FrameClass.NON_IP
                    else f"hash {k:#010x}")
    table = SimpleNamespace(hashes=np.arange(len(flows), dtype=np.uint64)[:, None],
                            windows=np.stack(windows), classes=np.array(classes))
    assert flow_labels(table) == want
