# SPDX-License-Identifier: BSD-2-Clause
"""Host transports: open the link a device URL names (``docs/TRANSPORTS.md``).

In ``docs/DESIGN.md``'s data flow this is "transport (serial port, or a socket/pty into a
running simulation)": the device driver (:mod:`host_sw.device.driver`) calls
:meth:`Transport.read_words` / :meth:`Transport.write_words` on what
:func:`open_transport` returns. One link per module, as LiteX keeps them
(``comm_uart.py``, ``comm_udp.py``):

* :mod:`host_sw.device.transport_base` — :class:`Transport`, :class:`ByteTransport` (the
  UARTBone byte protocol over any link, retries) and the errors;
* :mod:`host_sw.device.serial_transport` — :class:`SerialTransport` (pyserial
  ``serial_for_url``: a UART, a pty, ``loop://``, ``socket://``, ``rfc2217://`` …);
* :mod:`host_sw.device.socket_transport` — :class:`SocketTransport` (TCP to a simulation's
  bridge);
* :mod:`host_sw.device.fake_transport` — :class:`FakeTransport` (an in-memory
  :class:`~host_sw.device.fake_device.FakeDevice`) and the ``fake://NAME`` table;
* :mod:`host_sw.device.core_select` — :class:`OffsetTransport` (one core of several behind
  a shared link) and the shared link;
* :mod:`host_sw.device.url` (URL parsing) and :mod:`host_sw.device.csr_bases` (core bases
  from a board's ``csr.csv``).

This module names them all and composes them: :func:`open_transport` picks one from a URL
(``?core=N`` or ``?core=NAME&csr_csv=FILE`` selects a core); :func:`open_transports` opens
several and shares a link that two of them name.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from host_sw.contracts.config import CONFIG_CLASSES
from host_sw.device.core_select import OffsetTransport, SharedLink
from host_sw.device.csr_bases import core_word_base
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import (FAKE_DEVICES, FakeDevices, FakeTransport)
from host_sw.device.serial_transport import SerialTransport
from host_sw.device.socket_transport import SocketTransport
from host_sw.device.transport_base import (Transport)
from host_sw.device.url import DeviceUrl, parse_device_url

__all__ = ["open_transport", "open_transports"]


def _fresh_fake(rest) -> FakeDevice:
    """A default-configured fake device of the URL's ``synopsis=`` kind (LDA if none)."""
    kind = dict(rest).get("synopsis", "lda")
    devices = sorted(k for k, c in CONFIG_CLASSES.items() if c.has_gateware)
    if kind not in devices:
        raise ValueError(f"fake://?synopsis= must be one of {devices}"
                         + (f" ({kind} has no gateware yet)" if kind in CONFIG_CLASSES else ""))
    return FakeDevice(CONFIG_CLASSES[kind]())


def _open_link(url: DeviceUrl, options: dict, name: str, fakes: FakeDevices) -> Transport:
    """The transport of one link (no core offset)."""
    scheme = url.scheme
    if scheme == "fake":
        options.pop("baudrate", None)
        fake_name = "" if url.fresh_fake else url.link[len("fake://"):]
        device = fakes.lookup(fake_name) if fake_name else _fresh_fake(url.rest)
        return FakeTransport(device, name=name, **options)
    if scheme == "tcp":
        options.pop("baudrate", None)
        parts = urlsplit(url.link)
        if not parts.hostname or not parts.port:
            raise ValueError(f"a TCP device URL is tcp://HOST:PORT, not {name!r}")
        return SocketTransport(parts.hostname, parts.port, name=name, **options)
    link = url.link
    if url.rest:
        link += "?" + "&".join(f"{k}={v}" for k, v in url.rest)
    return SerialTransport(link, name=name, **options)


@dataclass
class _Plan:
    """One URL of :func:`open_transports`: its link and where its core sits on it."""
    url: DeviceUrl
    key: tuple
    word_base: int
    span: int | None


def _plan(urls, cores, csr_csv, overrides) -> list[_Plan]:
    plans = []
    for k, (url, core) in enumerate(zip(urls, cores)):
        parsed = parse_device_url(url, core=core, csr_csv=csr_csv)
        parsed.options.update({o: v for o, v in overrides.items() if v is not None})
        select = parsed.select
        word_base, span = core_word_base(select.get("core"), csr_base=select.get("csr_base"),
                                         csr_csv=select.get("csr_csv"))
        key = ("fresh", k) if parsed.fresh_fake else parsed.link_key
        plans.append(_Plan(parsed, key, word_base, span))
    return plans


def _group_by_link(plans: list[_Plan]) -> dict[tuple, list[_Plan]]:
    """The plans of each link; the URLs of one link must agree on its options and name
    different cores."""
    links: dict[tuple, list[_Plan]] = {}
    for plan in plans:
        group = links.setdefault(plan.key, [])
        if group:
            first = group[0].url
            if plan.url.options != first.options:
                raise ValueError(f"{first.url!r} and {plan.url.url!r} name the same link "
                                 f"with different options ({first.options} vs "
                                 f"{plan.url.options})")
            if any(p.word_base == plan.word_base for p in group):
                raise ValueError(f"{first.url!r} and {plan.url.url!r} name the same core "
                                 f"(word base {plan.word_base:#x}) of the same link")
        group.append(plan)
    return links


def open_transports(urls, *, cores=None, csr_csv=None, fakes: FakeDevices | None = None,
                    **overrides) -> list[Transport]:
    """Open several devices' transports; URLs that name the same link share it.

    Each URL is opened as :func:`open_transport` does. When two of them name the same
    link (``/dev/ttyUSB0?core=0`` and ``serial:///dev/ttyUSB0?core=1``: two cores behind
    one UART), the link is opened once and each gets an :class:`OffsetTransport` on it;
    the link is closed when the last of them is. This is safe because every access is one
    command and its complete reply (the router answers in order), and the host issues one
    at a time. A fresh ``fake://?synopsis=…`` is never shared.

    Parameters
    ----------
    urls : sequence of str
    cores : sequence, optional
        A core (index or name) per URL, or None; must agree with a ``core=`` in the URL.
    csr_csv : path, optional
        The board's ``csr.csv`` for every URL (core names and bases).
    fakes : FakeDevices, optional
        The devices ``fake://NAME`` opens (default: the process-wide
        :data:`~host_sw.device.fake_transport.FAKE_DEVICES`).
    overrides :
        Link options that win over the URLs' (``timeout``, ``retries``, …; None ignored).

    Raises ``ValueError`` for a bad URL or core, for two URLs that name the same link
    with different link options, and for two URLs that name the same core.
    """
    urls = list(urls)
    cores = list(cores) if cores is not None else [None] * len(urls)
    if len(cores) != len(urls):
        raise ValueError(f"{len(cores)} cores for {len(urls)} URLs")
    fakes = FAKE_DEVICES if fakes is None else fakes
    plans = _plan(urls, cores, csr_csv, overrides)
    links = _group_by_link(plans)
    opened: dict[tuple, Transport] = {}
    out: list[Transport] = []
    try:
        for plan in plans:
            group = links[plan.key]
            if plan.key not in opened:
                first = group[0].url
                name = first.url if len(group) == 1 else first.url.partition("?")[0]
                inner = _open_link(plan.url, dict(plan.url.options), name, fakes)
                opened[plan.key] = SharedLink(inner, len(group)) if len(group) > 1 else inner
            link = opened[plan.key]
            if len(group) > 1 or plan.url.select:
                out.append(OffsetTransport(link, word_base=plan.word_base, span=plan.span,
                                           name=plan.url.url))
            else:
                out.append(link)
    except BaseException:
        for link in opened.values():
            getattr(link, "inner", link).close()
        raise
    return out


def open_transport(url: str, *, core=None, csr_csv=None, fakes: FakeDevices | None = None,
                   **overrides) -> Transport:
    """Open the transport a device URL names.

    * ``fake://NAME`` — a device registered in ``fakes`` (default: with
      :func:`register_fake_device`); ``fake://`` with ``?synopsis=lda|rda|lds`` — a fresh
      default-configured fake;
    * ``tcp://HOST:PORT`` — :class:`SocketTransport`;
    * anything else (``/dev/ttyUSB0?baud=921600``, ``loop://``, ``socket://…``,
      ``serial:///dev/ttyUSB0``) — :class:`SerialTransport`.

    Query options for all: ``timeout`` (s), ``retries``, ``resync_delay`` (s),
    ``max_burst``, ``verify``, ``framing`` (``checked``, the default, or ``plain``); serial:
    ``baud``. Keyword ``overrides`` win over the URL.

    A core behind a shared bus (``docs/TRANSPORTS.md``): ``core=N`` (index; word base
    ``N × 0x100000`` as :class:`boards.bus_router.UARTBoneRouter` lays them out, or the
    ``N``-th ``csr_base`` of ``csr_csv``), ``core=NAME`` with ``csr_csv=FILE`` (the
    board's ``csr.csv`` region), or ``csr_base=0x400000`` (a byte base). The ``core`` and
    ``csr_csv`` arguments are the same as those keys (they must agree with the URL's).
    With any of them the result is an :class:`OffsetTransport`.
    """
    return open_transports([url], cores=[core], csr_csv=csr_csv, fakes=fakes,
                           **overrides)[0]
