# SPDX-License-Identifier: BSD-2-Clause
"""In-band frames and their tags: control-frame building, the sender's markers, the
receiver's marker check, the exporter and the SipHash engine."""
