// SPDX-License-Identifier: LGPL-2.1-or-later
// Read and decode IDs of /dev/snowflake (docs/clients.md).  IDs are longs:
// bit 63 of an ID is 0, so they are never negative.
//
//   try (Snowflake sf = new Snowflake(null)) {
//       long[] ids = sf.next(16);                    // increasing
//       Snowflake.Parts p = Snowflake.decode(ids[0]);
//   }
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

public final class Snowflake implements AutoCloseable {
    public static final String DEFAULT_PATH = "/dev/snowflake";

    /** The device refuses IDs (ENOTCONN): strict mode without a worker id, or fenced. */
    public static final class RefusedException extends IOException {
        RefusedException() {
            super(describe("Transport endpoint is not connected"));
        }
    }

    public static String describe(String what) {
        if (what != null && what.contains("not connected"))
            return "the device refuses IDs (ENOTCONN): strict mode without a worker id, "
                + "or fenced by snowflake-agent; see `snowflake config`";
        return what;
    }

    public final String path;
    private final FileInputStream in;
    private final ByteBuffer rest = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());

    public Snowflake(String path) throws IOException {
        String env = System.getenv("SNOWFLAKE_DEVICE");
        this.path = path != null ? path : env != null && !env.isEmpty() ? env : DEFAULT_PATH;
        this.in = new FileInputStream(this.path);
    }

    /** n IDs: a read may return fewer (the millisecond ran out): loop. */
    public long[] next(int n) throws IOException {
        long[] out = new long[n];
        int have = 0;
        byte[] buf = new byte[8 * n];
        while (have < n) {
            int got;
            try {
                got = in.read(buf, 0, 8 * (n - have));
            } catch (IOException e) {
                if (e.getMessage() != null && e.getMessage().contains("not connected"))
                    throw new RefusedException();
                throw e;
            }
            if (got < 0)
                throw new IOException("end of file: no more IDs in " + path);
            for (int i = 0; i < got; i++) {
                rest.put(buf[i]);
                if (!rest.hasRemaining()) {   // a whole ID (a pipe may split one)
                    rest.flip();
                    out[have++] = rest.getLong();
                    rest.clear();
                }
            }
        }
        return out;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }

    public static final class Parts {
        public long timestamp, unixMs;
        public int datacenter, worker, sequence;
    }

    /** Split an ID with the default layout (41/5/5/12, Twitter's epoch, 1 ms). */
    public static Parts decode(long id) {
        return decode(id, 1288834974657L, 1, 5, 5, 12);
    }

    public static Parts decode(long id, long epochMs, long unitMs, int dcBits, int wBits, int seqBits) {
        Parts p = new Parts();
        p.timestamp = id >>> (seqBits + wBits + dcBits);
        p.unixMs = epochMs + p.timestamp * unitMs;
        p.datacenter = (int) ((id >>> (seqBits + wBits)) & ((1L << dcBits) - 1));
        p.worker = (int) ((id >>> seqBits) & ((1L << wBits) - 1));
        p.sequence = (int) (id & ((1L << seqBits) - 1));
        return p;
    }
}
