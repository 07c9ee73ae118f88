// SPDX-License-Identifier: LGPL-2.1-or-later
// scripts/clients-test.sh: IDS_FILE (the recorded IDs, decimal), the stream
// in $SNOWFLAKE_DEVICE, DECODED (the CLI's `decode --json` of them).
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class ClientTest {
    private static int n;

    private static void check(boolean ok, String what) {
        System.out.println((ok ? "ok " : "not ok ") + ++n + " " + what);
    }

    private static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"?([0-9]+)").matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(System.getenv("IDS_FILE")));
        long[] want = lines.stream().mapToLong(Long::parseLong).toArray();
        long[] got;
        try (Snowflake sf = new Snowflake(null)) {
            got = sf.next(want.length);
        }
        check(java.util.Arrays.equals(want, got),
            "java: " + want.length + " IDs read as recorded, across short reads");
        boolean ok = true;
        for (String c : Files.readAllLines(Paths.get(System.getenv("DECODED")))) {
            Snowflake.Parts p = Snowflake.decode(field(c, "id"));
            ok &= p.timestamp == field(c, "timestamp") && p.unixMs == field(c, "unix_ms")
                && p.datacenter == field(c, "datacenter") && p.worker == field(c, "worker")
                && p.sequence == field(c, "sequence");
        }
        check(ok, "java: decode agrees with snowflake decode --json");
        check(Snowflake.describe("Transport endpoint is not connected").contains("ENOTCONN"),
            "java: ENOTCONN is reported as refused (strict or fenced)");
    }
}
