// SPDX-License-Identifier: LGPL-2.1-or-later
package dev.snowflake;

import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * IDs of /dev/snowflake ($SNOWFLAKE_DEVICE), and their decoding.  IDs are
 * longs holding unsigned 64-bit values: the device's have bit 63 clear, so
 * they are never negative; {@link #toUnsignedString} and
 * {@link Long#compareUnsigned} handle any.  JSON gets them as strings
 * ({@link #toJsonIds}, {@link Parts#toJson}): JavaScript rounds numbers past
 * 2^53.
 *
 * <pre>
 * try (Snowflake sf = new Snowflake()) {        // $SNOWFLAKE_DEVICE, else /dev/snowflake
 *     long[] ids = sf.next(16);                 // strictly increasing
 *     Snowflake.Parts p = Snowflake.decode(ids[0]);
 * }
 * </pre>
 * Not for concurrent use: one per thread, or a lock.
 */
public final class Snowflake extends RecordStream {
    public static final String DEFAULT_PATH = "/dev/snowflake";
    public static final String DEFAULT_UUID_PATH = "/dev/uuidv7";

    /** The shape of an ID (the device's: `snowflake config`). */
    public record Layout(long epochMs, long timeUnitMs, int timestampBits, int datacenterBits,
                         int workerBits, int sequenceBits) {
    }

    /** 41/5/5/12 from Twitter's epoch, in milliseconds: the module's default. */
    public static final Layout DEFAULT_LAYOUT = new Layout(1288834974657L, 1, 41, 5, 5, 12);

    /** Opens $SNOWFLAKE_DEVICE, else /dev/snowflake. */
    public Snowflake() throws SnowflakeException {
        this((String) null);
    }

    /** Opens path (null: $SNOWFLAKE_DEVICE, else /dev/snowflake). */
    public Snowflake(String path) throws SnowflakeException {
        super(path, "SNOWFLAKE_DEVICE", DEFAULT_PATH, "snowflake", 8);
    }

    /** Reads a channel already open (a descriptor handed in); close() leaves it open. */
    public Snowflake(ReadableByteChannel in) {
        super(in, 8);
    }

    /** n IDs, strictly increasing. */
    public long[] next(int n) throws IOException {
        long[] out = new long[n];
        int[] i = {0};
        read(n, b -> out[i[0]++] = b.order(ByteOrder.nativeOrder()).getLong());
        return out;
    }

    /** One ID. */
    public long next() throws IOException {
        return next(1)[0];
    }

    /** An ID as its unsigned decimal. */
    public static String toUnsignedString(long id) {
        return Long.toUnsignedString(id);
    }

    /** IDs as a JSON array of strings, as `snowflake next --format json` prints them. */
    public static String toJsonIds(long... ids) {
        return Arrays.stream(ids).mapToObj(i -> "\"" + Long.toUnsignedString(i) + "\"")
            .collect(Collectors.joining(",", "[", "]"));
    }

    /** The message for an errno (its name) of the device at path. */
    public static String describe(String errno, String path) {
        switch (errno == null ? "" : errno) {
        case "ENOTCONN":
            return path + " refuses IDs (ENOTCONN): strict mode and no worker id yet, or fenced "
                + "by snowflake-agent (lease lost or expired, or the VM was cloned); "
                + "see `snowflake config`; /dev/uuidv7 keeps serving";
        case "ENOENT":
        case "ENODEV":
        case "ENXIO":
            return path + ": no such device (" + errno + "): is the snowflake module loaded? "
                + "(`modprobe snowflake`; in a container: --device " + path + ")";
        case "ENOTTY":
            return path + ": not a snowflake device (ENOTTY): a character device that is not "
                + "the generator (see its /sys/dev/char entry)";
        case "EACCES":
        case "EPERM":
            return path + ": permission denied (" + errno + "): reading needs the group snowflake "
                + "(`usermod -aG snowflake USER`, SupplementaryGroups=snowflake in a unit, "
                + "--group-add in a container)";
        default:
            return path + ": " + errno;
        }
    }

    private static final long MAX_TIME_MS = 253402300799999L;   // 9999-12-31T23:59:59.999Z
    private static final DateTimeFormatter ISO =
        DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /** The time as `snowflake decode` writes it; null past the year 9999. */
    static String isoTime(long unixMs) {
        return Long.compareUnsigned(unixMs, MAX_TIME_MS) > 0 ? null : ISO.format(Instant.ofEpochMilli(unixMs));
    }

    static String jsonString(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    /** The fields of `snowflake decode --json` (unixMs and timestamp: unsigned). */
    public record Parts(long id, String time, long unixMs, long timestamp, int datacenter, int worker,
                        int sequence) {
        /** The line of `snowflake decode --json`: the ID as a string. */
        public String toJson() {
            return "{\"id\":\"" + Long.toUnsignedString(id) + "\",\"time\":" + jsonString(time)
                + ",\"unix_ms\":" + Long.toUnsignedString(unixMs) + ",\"timestamp\":"
                + Long.toUnsignedString(timestamp) + ",\"datacenter\":" + datacenter + ",\"worker\":"
                + worker + ",\"sequence\":" + sequence + "}";
        }
    }

    /** Splits an ID with the default layout. */
    public static Parts decode(long id) {
        return decode(id, DEFAULT_LAYOUT);
    }

    /** Splits an ID with a layout; IllegalArgumentException for bits above it. */
    public static Parts decode(long id, Layout l) {
        int low = l.sequenceBits() + l.workerBits() + l.datacenterBits();
        int bits = low + l.timestampBits();
        if (bits < 64 && id >>> bits != 0)
            throw new IllegalArgumentException(Long.toUnsignedString(id) + " has bits set above the "
                + l.timestampBits() + "/" + l.datacenterBits() + "/" + l.workerBits() + "/"
                + l.sequenceBits() + " layout");
        long ts = id >>> low;
        long ms = l.epochMs() + ts * l.timeUnitMs();
        return new Parts(id, isoTime(ms), ms, ts,
            (int) ((id >>> (l.sequenceBits() + l.workerBits())) & ((1L << l.datacenterBits()) - 1)),
            (int) ((id >>> l.sequenceBits()) & ((1L << l.workerBits()) - 1)),
            (int) (id & ((1L << l.sequenceBits()) - 1)));
    }
}
