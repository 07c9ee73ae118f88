// SPDX-License-Identifier: LGPL-2.1-or-later
package dev.snowflake;

import java.io.IOException;
import java.nio.channels.ReadableByteChannel;
import java.util.Comparator;
import java.util.UUID;

/**
 * UUIDv7s of /dev/uuidv7 ($SNOWFLAKE_UUID_DEVICE).  Each is greater than the
 * ones before it as bytes: compare with {@link #BYTE_ORDER}, not
 * UUID.compareTo (which compares signed longs).
 */
public final class UuidV7 extends RecordStream {
    /** The order of the bytes (RFC 9562's, a database's uuid order). */
    public static final Comparator<UUID> BYTE_ORDER = (a, b) -> {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    };

    /** Opens $SNOWFLAKE_UUID_DEVICE, else /dev/uuidv7. */
    public UuidV7() throws SnowflakeException {
        this((String) null);
    }

    /** Opens path (null: $SNOWFLAKE_UUID_DEVICE, else /dev/uuidv7). */
    public UuidV7(String path) throws SnowflakeException {
        super(path, "SNOWFLAKE_UUID_DEVICE", Snowflake.DEFAULT_UUID_PATH, "uuidv7", 16);
    }

    /** Reads a channel already open; close() leaves it open. */
    public UuidV7(ReadableByteChannel in) {
        super(in, 16);
    }

    /** n UUIDv7s, strictly increasing. */
    public UUID[] next(int n) throws IOException {
        UUID[] out = new UUID[n];
        int[] i = {0};
        read(n, b -> out[i[0]++] = new UUID(b.getLong(), b.getLong()));   // big-endian
        return out;
    }

    /** The time of a UUIDv7, as `snowflake decode --json` gives it. */
    public record Parts(UUID uuid, int version, String time, long unixMs) {
        public String toJson() {
            return "{\"uuid\":\"" + uuid + "\",\"version\":" + version + ",\"time\":"
                + Snowflake.jsonString(time) + ",\"unix_ms\":" + unixMs + "}";
        }
    }

    /** Decodes a UUIDv7; IllegalArgumentException for another version. */
    public static Parts decode(UUID u) {
        if (u.version() != 7 || u.variant() != 2)
            throw new IllegalArgumentException(u + " is not a UUIDv7");
        long ms = u.getMostSignificantBits() >>> 16;
        return new Parts(u, 7, Snowflake.isoTime(ms), ms);
    }
}
