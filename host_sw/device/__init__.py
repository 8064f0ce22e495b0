# SPDX-License-Identifier: BSD-2-Clause
"""The device layer: reaching a core's registers from the host (``docs/DESIGN.md``).

Above the contracts and the estimators, below the CLI. From the bottom up:

* ``url`` (device URLs taken apart) and ``csr_bases`` (a core's base on a shared link);
* ``transport_base`` (the transport interface, UARTBone over a byte link, errors), one
  module per link — ``serial_transport``, ``socket_transport``, ``fake_transport`` — and
  ``core_select`` (one core of several on a link); ``transport`` opens them from URLs;
* ``register_file`` and ``fake_device`` (an in-memory core built from the register map,
  with fault injection, for tests);
* ``snapshot`` (one interval as read, valid only with a passing check) and ``driver``
  (registers by name, configuration, consistent and checked snapshots of intervals).
"""
