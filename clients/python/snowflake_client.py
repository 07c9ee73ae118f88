# SPDX-License-Identifier: LGPL-2.1-or-later
"""Read and decode IDs of /dev/snowflake (docs/clients.md).

    from snowflake_client import Snowflake, decode
    with Snowflake() as sf:
        ids = sf.next(16)          # 16 ints, increasing
    decode(ids[0])                 # {'unix_ms': ..., 'datacenter': ..., ...}
"""
import errno
import os
import struct
import sys

DEFAULT_PATH = "/dev/snowflake"
DEFAULT_LAYOUT = {"epoch_ms": 1288834974657, "time_unit_ms": 1,
                  "timestamp_bits": 41, "datacenter_bits": 5,
                  "worker_bits": 5, "sequence_bits": 12}
_ORDER = "<" if sys.byteorder == "little" else ">"   # the host's byte order


class SnowflakeRefused(OSError):
    """The device refuses IDs (ENOTCONN): strict mode without a worker id,
    or fenced by snowflake-agent (its lease may be lost)."""


def describe(err):
    """A message for an errno of the device."""
    if err == errno.ENOTCONN:
        return ("the device refuses IDs (ENOTCONN): strict mode without a worker id, "
                "or fenced by snowflake-agent; see `snowflake config`")
    if err == errno.ENOENT:
        return "no /dev/snowflake: is the snowflake module loaded?"
    if err == errno.EACCES:
        return "permission denied: add the user to the group snowflake"
    return os.strerror(err)


class Snowflake:
    """A reader of the device: $SNOWFLAKE_DEVICE or /dev/snowflake."""

    def __init__(self, path=None):
        self.path = path or os.environ.get("SNOWFLAKE_DEVICE") or DEFAULT_PATH
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self._rest = b""     # a part of an ID (never from the device; from a pipe)

    def next(self, n=1):
        """n IDs: a read may return fewer (the millisecond ran out): loop."""
        out = []
        while len(out) < n:
            try:
                data = os.read(self._fd, 8 * (n - len(out)))
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                cls = SnowflakeRefused if e.errno == errno.ENOTCONN else OSError
                raise cls(e.errno, describe(e.errno)) from None
            if not data:
                raise EOFError("end of file: no more IDs in " + self.path)
            data = self._rest + data
            whole = len(data) // 8 * 8
            self._rest = data[whole:]
            out.extend(struct.unpack(_ORDER + "%dQ" % (whole // 8), data[:whole]))
        return out

    def close(self):
        os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def decode(id_, layout=DEFAULT_LAYOUT):
    """Split an ID with a layout (the device's: `snowflake config`)."""
    seq_b, w_b, dc_b = layout["sequence_bits"], layout["worker_bits"], layout["datacenter_bits"]
    ts = id_ >> (seq_b + w_b + dc_b)
    return {"id": str(id_), "timestamp": ts,
            "unix_ms": layout["epoch_ms"] + ts * layout["time_unit_ms"],
            "datacenter": (id_ >> (seq_b + w_b)) & ((1 << dc_b) - 1),
            "worker": (id_ >> seq_b) & ((1 << w_b) - 1),
            "sequence": id_ & ((1 << seq_b) - 1)}
