# SPDX-License-Identifier: BSD-2-Clause
"""Device URLs: which link, with which options, and which core on it.

In ``docs/DESIGN.md``'s data flow this is the first step of reaching a device: the CLI's
``-d URL`` (``docs/TRANSPORTS.md``) is split here into the link (serial port, ``tcp://``,
``fake://``), the link options every transport takes (``timeout``, ``retries``,
``resync_delay``, ``max_burst``, ``verify``, ``framing`` — ``checked`` by default or
``plain`` —, ``baud``) and the core selection (``core``,
``csr_base``, ``csr_csv``); :func:`host_sw.device.transport.open_transports` then opens the
links. Nothing is opened here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from host_sw.contracts.uartbone import FRAMINGS, MAX_BURST

__all__ = ["CORE_KEYS", "DeviceUrl", "parse_options", "parse_device_url"]


def _flag(value: str) -> bool:
    return value.lower() in ("1", "true", "yes", "on")


def _bounded(kind, low, high, *, open_low: bool = False):
    """A parser of a number in ``low..high`` (above ``low`` when ``open_low``), finite:
    the bounds of the CLI's own options (``--timeout`` 0 < s <= 3600, ``--retries``
    0..100), so that ``?timeout=inf`` or ``?retries=1000000`` is refused as they are."""
    def parse(text: str):
        v = kind(text)
        if not math.isfinite(v) or v < low or (open_low and v == low) or v > high:
            raise ValueError(f"must be above {low} and at most {high}" if open_low
                             else f"must be {low}..{high}")
        return v
    return parse


def _framing(value: str) -> str:
    if value not in FRAMINGS:
        raise ValueError(value)
    return value


#: The largest baud rate accepted (UARTs of the boards run at most a few Mbaud).
MAX_BAUD = 100_000_000

_OPTION_TYPES = {"timeout": _bounded(float, 0, 3600, open_low=True),
                 "retries": _bounded(int, 0, 100),
                 "resync_delay": _bounded(float, 0, 60),
                 "max_burst": _bounded(int, 1, MAX_BURST),
                 "verify": _flag, "framing": _framing}
#: URL query keys that select a core on the link (not link options).
CORE_KEYS = ("core", "csr_base", "csr_csv")


def parse_options(query: str) -> tuple[dict, list[tuple[str, str]]]:
    """Split a URL query into transport options and the rest."""
    ours, rest = {}, []
    for key, value in parse_qsl(query, keep_blank_values=True):
        k = key.replace("-", "_")
        if k in _OPTION_TYPES:
            try:
                ours[k] = _OPTION_TYPES[k](value)
            except ValueError as e:
                why = f" ({e})" if str(e).startswith("must") else ""
                raise ValueError(f"bad value {value!r} for the {key} option{why}") from None
        elif k in ("baud", "baudrate"):
            try:
                ours["baudrate"] = _bounded(int, 1, MAX_BAUD)(value)
            except ValueError:
                raise ValueError(f"bad baud rate {value!r} (1..{MAX_BAUD})") from None
        else:
            rest.append((key, value))
    return ours, rest


@dataclass
class DeviceUrl:
    """One device URL, taken apart.

    Attributes
    ----------
    url : str
        As given.
    link : str
        The link without the query (``serial://`` dropped): ``/dev/ttyUSB0``,
        ``tcp://127.0.0.1:5000``, ``fake://NAME``.
    options : dict
        Link options (keyword arguments of the transports).
    rest : list of (str, str)
        Other query items: a serial URL's own (``loop://?logging=debug``), a fresh fake's
        ``synopsis``.
    select : dict
        The core selection (keys of :data:`CORE_KEYS`, string values); empty for the
        whole link.
    """
    url: str
    link: str
    options: dict = field(default_factory=dict)
    rest: list = field(default_factory=list)
    select: dict = field(default_factory=dict)

    @property
    def scheme(self) -> str:
        return urlsplit(self.link).scheme if "://" in self.link else ""

    @property
    def fresh_fake(self) -> bool:
        """``fake://`` without a name: a new default-configured device every time."""
        return self.link.rstrip("/") == "fake:"

    @property
    def link_key(self) -> tuple:
        """What two URLs naming the same link have in common."""
        return (self.link, tuple(sorted(self.rest)))


def _core_selection(rest, core, csr_csv) -> tuple[dict, list]:
    """The core keys of the query, merged with the command line's ``core``/``csr_csv``
    (which must agree with the URL's), and the remaining query items."""
    select, other = {}, []
    for key, value in rest:
        k = key.replace("-", "_")
        if k in CORE_KEYS:
            if k in select and select[k] != value:
                raise ValueError(f"the URL gives {key} twice ({select[k]!r}, {value!r})")
            select[k] = value
        else:
            other.append((key, value))
    for k, given in (("core", core), ("csr_csv", csr_csv)):
        if given is None:
            continue
        given = str(given)
        if k in select and select[k] != given:
            raise ValueError(f"the URL selects {k}={select[k]} and the command line "
                             f"{k}={given}: give one")
        select[k] = given
    return select, other


def parse_device_url(url: str, *, core=None, csr_csv=None) -> DeviceUrl:
    """Take a device URL apart; ``core``/``csr_csv`` from the command line must agree with
    the URL's own ``core=``/``csr_csv=``."""
    if not url:
        raise ValueError("empty device URL")
    link, _, query = url.partition("?")
    options, rest = parse_options(query)
    select, other = _core_selection(rest, core, csr_csv)
    if link.startswith("serial://"):
        link = link[len("serial://"):]
    return DeviceUrl(url=url, link=link, options=options, rest=other, select=select)
