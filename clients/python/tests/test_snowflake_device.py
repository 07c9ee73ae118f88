# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest tests of snowflake_device, run by tests/clients/run.sh on the
package installed into a venv.  The recorded streams come from the
environment: SNOWFLAKE_DEVICE and SNOWFLAKE_UUID_DEVICE (a file, or a FIFO
written in 13-byte pieces), IDS_FILE and UUIDS_FILE (what they hold, one a
line), DECODED, DECODED_CUSTOM and UUIDS_DECODED (`snowflake decode --json`
of some of them), CUSTOM_BITS/CUSTOM_EPOCH/CUSTOM_UNIT (the custom layout)."""
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import uuid

import pytest

import snowflake_device as sf


def lines(var):
    with open(os.environ[var]) as f:
        return [line.strip() for line in f if line.strip()]


def custom_layout():
    t, d, w, s = (int(x) for x in os.environ["CUSTOM_BITS"].split("/"))
    return {"epoch_ms": int(os.environ["CUSTOM_EPOCH"]), "time_unit_ms": int(os.environ["CUSTOM_UNIT"]),
            "timestamp_bits": t, "datacenter_bits": d, "worker_bits": w, "sequence_bits": s}


def test_reads_the_recorded_ids_across_short_reads():
    want = [int(x) for x in lines("IDS_FILE")]
    with sf.Snowflake() as dev:
        got = dev.next(len(want))
    assert got == want
    assert all(type(i) is int and 0 <= i < 1 << 64 for i in got)


def test_reads_the_recorded_uuids_across_short_reads():
    want = lines("UUIDS_FILE")
    with sf.UUIDv7() as dev:
        got = dev.next(len(want))
    assert [str(u) for u in got] == want
    assert all(a.bytes < b.bytes for a, b in zip(got, got[1:]))


def test_decode_agrees_with_the_cli():
    cli = [json.loads(x) for x in lines("DECODED")]
    assert len(cli) > 1
    assert [sf.decode(c["id"]) for c in cli] == cli
    assert [sf.decode(int(c["id"])) for c in cli] == cli
    # JSON of a decoded ID: the ID as a string, as the CLI writes it.
    assert json.loads(json.dumps(sf.decode(cli[0]["id"]))) == cli[0]


def test_decode_with_another_layout_agrees_with_the_cli():
    cli = [json.loads(x) for x in lines("DECODED_CUSTOM")]
    assert len(cli) > 1
    assert [sf.decode(c["id"], custom_layout()) for c in cli] == cli


def test_decode_uuid_agrees_with_the_cli():
    cli = [json.loads(x) for x in lines("UUIDS_DECODED")]
    assert len(cli) > 1
    assert [sf.decode_uuid(c["uuid"]) for c in cli] == cli
    assert [sf.decode_uuid(uuid.UUID(c["uuid"]).bytes) for c in cli] == cli
    with pytest.raises(ValueError, match="not a UUIDv7"):
        sf.decode_uuid(uuid.uuid4())


def test_ids_are_unsigned_64_bit(tmp_path):
    f = tmp_path / "ids"
    f.write_bytes(b"\xff" * 8 + (1 << 63).to_bytes(8, sys.byteorder) + b"\x01\x02\x03")
    with sf.Snowflake(str(f)) as dev:
        assert dev.next(2) == [(1 << 64) - 1, 1 << 63]
        with pytest.raises(EOFError):      # 3 bytes are no ID
            dev.next()
    assert sf.to_json_ids([(1 << 64) - 1, 7]) == '["18446744073709551615","7"]'
    assert sf.decode((1 << 63) - 1)["timestamp"] == (1 << 41) - 1
    with pytest.raises(ValueError, match="above the 41/5/5/12 layout"):
        sf.decode(1 << 63)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        sf.decode(-1)


def test_no_device_says_so(tmp_path):
    path = str(tmp_path / "snowflake")
    with pytest.raises(sf.DeviceNotFound) as e:
        sf.Snowflake(path)
    assert e.value.errno == errno.ENOENT
    assert "is the snowflake module loaded?" in str(e.value) and path in str(e.value)
    with pytest.raises(sf.DeviceNotFound):
        sf.UUIDv7(path)


def test_no_permission_says_so(tmp_path):
    f = tmp_path / "snowflake"
    f.write_bytes(b"\0" * 8)
    f.chmod(0)
    if os.access(str(f), os.R_OK):
        pytest.skip("this process reads a mode-000 file (CAP_DAC_OVERRIDE): "
                    "tests/clients/run.sh runs the tests without it")
    with pytest.raises(sf.Denied) as e:
        sf.Snowflake(str(f))
    assert e.value.errno == errno.EACCES and "group snowflake" in str(e.value)


def test_enotconn_is_refused():
    # read(2) of a listening socket fails with ENOTCONN, as a read of the
    # device does while it refuses IDs.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(sf.Refused) as e:
            sf.Snowflake(fd=s.fileno()).next()
        assert e.value.errno == errno.ENOTCONN
        assert "ENOTCONN" in str(e.value) and "strict mode" in str(e.value)
        assert "fenced by snowflake-agent" in str(e.value)
        assert isinstance(e.value, OSError)


def test_a_signal_does_not_break_a_read(tmp_path):
    """A handler runs (every 10 ms) while a read waits on a FIFO whose writer
    starts after 300 ms: the IDs still all arrive, in order."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    ids = list(range(1000, 1512))
    data = b"".join(i.to_bytes(8, sys.byteorder) for i in ids)
    writer = subprocess.Popen([sys.executable, "-c", """
import sys, time
time.sleep(0.3)
with open(sys.argv[1], "wb", buffering=0) as f:
    d = sys.stdin.buffer.read()
    for i in range(0, len(d), 13):
        f.write(d[i:i + 13])
        time.sleep(0.0005)
""", fifo], stdin=subprocess.PIPE)
    writer.stdin.write(data)
    writer.stdin.close()
    seen = []
    old = signal.signal(signal.SIGALRM, lambda *a: seen.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
        with sf.Snowflake(fifo) as dev:
            got = dev.next(len(ids))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        writer.kill()
        writer.wait()
    assert got == ids
    assert seen, "no signal arrived during the read"


def test_refuses_a_character_device_that_is_not_the_generator(tmp_path, monkeypatch):
    """Issue 24: any character device opened as the generator (/dev/hwrng
    gave random numbers).  /dev/null, and FOREIGN_DEVICE: a node for a misc
    device that is not ours (fuse), made by clients-test.sh with mknod."""
    foreign = os.environ["FOREIGN_DEVICE"]
    for cls in (sf.Snowflake, sf.UUIDv7):
        for path in ("/dev/null", foreign):
            with pytest.raises(sf.NotSnowflakeDevice) as e:
                cls(path)
            assert e.value.errno == errno.ENOTTY
            assert "not a snowflake device" in str(e.value)
    monkeypatch.setenv("SNOWFLAKE_DEVICE", foreign)
    with pytest.raises(sf.NotSnowflakeDevice):
        sf.Snowflake()
    # A sysfs that names the node: each reader takes only its own device.
    (tmp_path / "dev" / "char").mkdir(parents=True)
    link = tmp_path / "dev" / "char" / os.environ["FOREIGN_DEVNUM"]
    monkeypatch.setattr(sf, "_SYSFS", str(tmp_path))
    for name, good, other in (("snowflake", sf.Snowflake, sf.UUIDv7),
                              ("uuidv7", sf.UUIDv7, sf.Snowflake)):
        if link.is_symlink():
            link.unlink()
        link.symlink_to("../../devices/virtual/misc/" + name)
        good(foreign).close()
        with pytest.raises(sf.NotSnowflakeDevice):
            other(foreign)
