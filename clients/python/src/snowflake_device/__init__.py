# SPDX-License-Identifier: LGPL-2.1-or-later
"""Read and decode the IDs of /dev/snowflake and the UUIDs of /dev/uuidv7.

    import snowflake_device as sf
    with sf.Snowflake() as dev:      # $SNOWFLAKE_DEVICE, else /dev/snowflake
        ids = dev.next(16)           # 16 ints, strictly increasing
    sf.decode(ids[0])                # {'id': '...', 'unix_ms': ..., 'worker': ...}

IDs are Python ints, unsigned 64-bit; decode() gives the ID as a string, as
JSON wants it (a JavaScript Number would round an ID).  Errors are OSErrors
with a message that says what to do: DeviceNotFound (no module), Denied (not
in the group), Refused (ENOTCONN: strict mode without a worker id, or fenced
by snowflake-agent), NotSnowflakeDevice (ENOTTY: a character device that
is not the generator, e.g. /dev/hwrng).
"""
import datetime
import errno
import os
import stat
import struct
import sys
import uuid as _uuid

__all__ = ["DEFAULT_LAYOUT", "DEFAULT_PATH", "DEFAULT_UUID_PATH", "Denied", "DeviceNotFound",
           "NotSnowflakeDevice", "Refused", "Snowflake", "SnowflakeError", "UUIDv7", "decode", "decode_uuid",
           "describe", "to_json_ids"]

DEFAULT_PATH = "/dev/snowflake"
DEFAULT_UUID_PATH = "/dev/uuidv7"
# 41/5/5/12 from Twitter's epoch, in milliseconds: the module's default
# (`snowflake config` shows the device's).
DEFAULT_LAYOUT = {"epoch_ms": 1288834974657, "time_unit_ms": 1,
                  "timestamp_bits": 41, "datacenter_bits": 5,
                  "worker_bits": 5, "sequence_bits": 12}
_ORDER = "<" if sys.byteorder == "little" else ">"   # IDs come in host byte order
_MAX_TIME_S = 253402300799                           # 9999-12-31T23:59:59Z


class SnowflakeError(OSError):
    """An error of the device, with a message that says what to do."""


class DeviceNotFound(SnowflakeError):
    """No such device: the module is not loaded (ENOENT, ENODEV, ENXIO)."""


class Denied(SnowflakeError):
    """Permission denied: not in the group that reads the device (EACCES, EPERM)."""


class Refused(SnowflakeError):
    """The device refuses IDs (ENOTCONN): strict mode without a worker id,
    or fenced by snowflake-agent (its lease was lost or ran out, or the VM
    was cloned).  Retrying later may succeed; /dev/uuidv7 keeps serving."""


class NotSnowflakeDevice(SnowflakeError):
    """A character device that is not the generator (ENOTTY): another misc
    device (/dev/hwrng, /dev/fuse), /dev/null, or /dev/uuidv7 given as
    /dev/snowflake and the reverse.  The device is known by its sysfs name;
    without sysfs it cannot be, and is refused too."""


# Where the kernel names the devices (/sys/dev/char/MAJ:MIN -> .../misc/NAME);
# the tests point it at a fake tree.
_SYSFS = "/sys"


def _identify(fd, path, name):
    """A character device must be the misc device called name ("snowflake" or
    "uuidv7"); other files (a recording, a FIFO) are read as they are."""
    st = os.fstat(fd)
    if not stat.S_ISCHR(st.st_mode):
        return
    link = ""
    if os.major(st.st_rdev) == 10:
        try:
            link = os.readlink("%s/dev/char/%d:%d" % (_SYSFS, os.major(st.st_rdev),
                                                     os.minor(st.st_rdev)))
        except OSError:
            pass
    if not link.endswith("/misc/" + name):
        raise NotSnowflakeDevice(errno.ENOTTY, "%s: not a snowflake device (not the misc "
                                 "device %s: see its /sys/dev/char entry)" % (path, name), path)


_CLASSES = {errno.ENOENT: DeviceNotFound, errno.ENODEV: DeviceNotFound,
            errno.ENXIO: DeviceNotFound, errno.EACCES: Denied, errno.EPERM: Denied,
            errno.ENOTCONN: Refused}


def describe(err, path=DEFAULT_PATH):
    """A message for an errno of the device at path."""
    if err == errno.ENOTCONN:
        return ("%s refuses IDs (ENOTCONN): strict mode and no worker id yet, or fenced "
                "by snowflake-agent (lease lost or expired, or the VM was cloned); "
                "see `snowflake config`; /dev/uuidv7 keeps serving" % path)
    if err in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return ("%s: no such device (%s): is the snowflake module loaded? "
                "(`modprobe snowflake`; in a container: --device %s)"
                % (path, errno.errorcode[err], path))
    if err in (errno.EACCES, errno.EPERM):
        return ("%s: permission denied (%s): reading needs the group snowflake "
                "(`usermod -aG snowflake USER`, SupplementaryGroups=snowflake in a unit, "
                "--group-add in a container)" % (path, errno.errorcode[err]))
    return "%s: %s" % (path, os.strerror(err))


def _error(err, path):
    return _CLASSES.get(err, SnowflakeError)(err, describe(err, path), path)


class _Reader:
    _size = 8
    _env = "SNOWFLAKE_DEVICE"
    _default = DEFAULT_PATH
    _name = "snowflake"

    def __init__(self, path=None, fd=None):
        """Open path (None: $SNOWFLAKE_DEVICE / $SNOWFLAKE_UUID_DEVICE, else
        the device), or use fd, a descriptor already open (not closed here)."""
        self._rest = b""   # a part of a record: from a pipe, never from the device
        if fd is not None:
            self.path, self._fd, self._own = "fd %d" % fd, fd, False
            return
        self.path = path or os.environ.get(self._env) or self._default
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            raise _error(e.errno, self.path) from None
        try:
            _identify(self._fd, self.path, self._name)
        except OSError:
            os.close(self._fd)
            raise
        self._own = True

    def _read(self, n):
        """n records: a read may return fewer (the device: the millisecond ran
        out; a pipe: any number of bytes), so it loops."""
        out = []
        while len(out) < n:
            try:
                data = os.read(self._fd, self._size * (n - len(out)))
            except InterruptedError:     # a signal: Python retries by itself (PEP 475)
                continue
            except OSError as e:
                raise _error(e.errno, self.path) from None
            if not data:
                raise EOFError("end of file: no more records in " + self.path)
            data = self._rest + data
            whole = len(data) - len(data) % self._size
            self._rest = data[whole:]
            out.extend(self._records(data[:whole]))
        return out

    def close(self):
        if self._own and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Snowflake(_Reader):
    """IDs of /dev/snowflake ($SNOWFLAKE_DEVICE), as ints."""

    def next(self, n=1):
        """n IDs, strictly increasing."""
        return self._read(n)

    @staticmethod
    def _records(data):
        return struct.unpack(_ORDER + "%dQ" % (len(data) // 8), data)


class UUIDv7(_Reader):
    """UUIDs of /dev/uuidv7 ($SNOWFLAKE_UUID_DEVICE), as uuid.UUID."""
    _size = 16
    _env = "SNOWFLAKE_UUID_DEVICE"
    _default = DEFAULT_UUID_PATH
    _name = "uuidv7"

    def next(self, n=1):
        """n UUIDv7s, strictly increasing (as bytes, and as UUIDs)."""
        return self._read(n)

    @staticmethod
    def _records(data):
        return [_uuid.UUID(bytes=data[i:i + 16]) for i in range(0, len(data), 16)]


def _time(unix_ms):
    """ISO 8601 UTC with milliseconds, as `snowflake decode`; None past year 9999."""
    if unix_ms // 1000 > _MAX_TIME_S:
        return None
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=unix_ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (unix_ms % 1000)


def decode(id_, layout=DEFAULT_LAYOUT):
    """Split an ID (an int or its decimal string) with a layout (the
    device's: `snowflake config`); the same fields as `snowflake decode
    --json`.  ValueError for an ID outside 0..2^64-1 or with bits above the
    layout."""
    id_ = int(id_)
    seq_b, w_b, dc_b = layout["sequence_bits"], layout["worker_bits"], layout["datacenter_bits"]
    bits = layout["timestamp_bits"] + dc_b + w_b + seq_b
    if not 0 <= id_ < 1 << 64:
        raise ValueError("%d is not an unsigned 64-bit ID" % id_)
    if id_ >> bits:
        raise ValueError("%d has bits set above the %d/%d/%d/%d layout"
                         % (id_, layout["timestamp_bits"], dc_b, w_b, seq_b))
    ts = id_ >> (seq_b + w_b + dc_b)
    unix_ms = layout["epoch_ms"] + ts * layout["time_unit_ms"]
    return {"id": str(id_), "time": _time(unix_ms), "unix_ms": unix_ms, "timestamp": ts,
            "datacenter": (id_ >> (seq_b + w_b)) & ((1 << dc_b) - 1),
            "worker": (id_ >> seq_b) & ((1 << w_b) - 1),
            "sequence": id_ & ((1 << seq_b) - 1)}


def decode_uuid(u):
    """The time of a UUIDv7 (a uuid.UUID, its string or its 16 bytes), as
    `snowflake decode --json` gives it; ValueError for another version."""
    if isinstance(u, (bytes, bytearray)):
        u = _uuid.UUID(bytes=bytes(u))
    elif not isinstance(u, _uuid.UUID):
        u = _uuid.UUID(str(u))
    if u.version != 7 or u.variant != _uuid.RFC_4122:
        raise ValueError("%s is not a UUIDv7" % u)
    unix_ms = u.int >> 80
    return {"uuid": str(u), "version": 7, "time": _time(unix_ms), "unix_ms": unix_ms}


def to_json_ids(ids):
    """IDs as a JSON array of strings, as `snowflake next --format json`
    prints them: JSON readers in JavaScript round numbers past 2^53."""
    return "[" + ",".join('"%d"' % i for i in ids) + "]"
