// SPDX-License-Identifier: LGPL-2.1-or-later
// JUnit 5 tests, run by Surefire in `mvn -o install` (tests/clients/run.sh).
// The recorded streams come from the environment: SNOWFLAKE_DEVICE and
// SNOWFLAKE_UUID_DEVICE (a file, or a FIFO written in 13-byte pieces),
// IDS_FILE and UUIDS_FILE (what they hold), DECODED, DECODED_CUSTOM and
// UUIDS_DECODED (`snowflake decode --json` of some of them),
// CUSTOM_BITS/CUSTOM_EPOCH/CUSTOM_UNIT (the custom layout).
package dev.snowflake;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnowflakeTest {
    private static List<String> lines(String var) throws Exception {
        return Files.readAllLines(Paths.get(System.getenv(var))).stream().filter(l -> !l.isEmpty()).toList();
    }

    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"?([0-9a-f-]+)").matcher(json);
        assertTrue(m.find(), name + " in " + json);
        return m.group(1);
    }

    @Test
    void readsTheRecordedIdsAcrossShortReads() throws Exception {
        long[] want = lines("IDS_FILE").stream().mapToLong(Long::parseUnsignedLong).toArray();
        try (Snowflake sf = new Snowflake()) {
            assertArrayEquals(want, sf.next(want.length));
        }
    }

    @Test
    void readsTheRecordedUuidsAcrossShortReads() throws Exception {
        List<String> want = lines("UUIDS_FILE");
        UUID[] got;
        try (UuidV7 u = new UuidV7()) {
            got = u.next(want.size());
        }
        for (int i = 0; i < got.length; i++) {
            assertEquals(want.get(i), got[i].toString());
            if (i > 0)
                assertTrue(UuidV7.BYTE_ORDER.compare(got[i - 1], got[i]) < 0);
        }
    }

    @Test
    void decodeAgreesWithTheCli() throws Exception {
        List<String> cli = lines("DECODED");
        assertTrue(cli.size() > 1);
        for (String line : cli)
            assertEquals(line, Snowflake.decode(Long.parseUnsignedLong(field(line, "id"))).toJson());
    }

    @Test
    void decodeWithAnotherLayoutAgreesWithTheCli() throws Exception {
        String[] b = System.getenv("CUSTOM_BITS").split("/");
        Snowflake.Layout l = new Snowflake.Layout(Long.parseLong(System.getenv("CUSTOM_EPOCH")),
            Long.parseLong(System.getenv("CUSTOM_UNIT")), Integer.parseInt(b[0]), Integer.parseInt(b[1]),
            Integer.parseInt(b[2]), Integer.parseInt(b[3]));
        List<String> cli = lines("DECODED_CUSTOM");
        assertTrue(cli.size() > 1);
        for (String line : cli)
            assertEquals(line, Snowflake.decode(Long.parseUnsignedLong(field(line, "id")), l).toJson());
    }

    @Test
    void decodeUuidAgreesWithTheCli() throws Exception {
        List<String> cli = lines("UUIDS_DECODED");
        assertTrue(cli.size() > 1);
        for (String line : cli)
            assertEquals(line, UuidV7.decode(UUID.fromString(field(line, "uuid"))).toJson());
        assertThrows(IllegalArgumentException.class,
            () -> UuidV7.decode(UUID.fromString("0189e2b6-1f0e-4c4b-8c2a-3b6f0e2a1d77")));
    }

    @Test
    void idsAreUnsigned64Bit(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("ids");
        ByteBuffer b = ByteBuffer.allocate(19).order(ByteOrder.nativeOrder());
        b.putLong(-1L).putLong(Long.MIN_VALUE).put(new byte[] {1, 2, 3});
        Files.write(f, b.array());
        try (Snowflake sf = new Snowflake(f.toString())) {
            long[] got = sf.next(2);
            assertEquals("18446744073709551615", Snowflake.toUnsignedString(got[0]));
            assertEquals("9223372036854775808", Snowflake.toUnsignedString(got[1]));
            assertEquals("[\"18446744073709551615\",\"9223372036854775808\"]", Snowflake.toJsonIds(got));
            assertTrue(Long.compareUnsigned(got[1], got[0]) < 0);
            assertThrows(EOFException.class, sf::next);   // 3 bytes are no ID
        }
        assertEquals((1L << 41) - 1, Snowflake.decode(Long.MAX_VALUE).timestamp());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> Snowflake.decode(Long.MIN_VALUE));
        assertTrue(e.getMessage().contains("9223372036854775808 has bits set above the 41/5/5/12 layout"));
    }

    @Test
    void noDeviceSaysSo(@TempDir Path dir) {
        String p = dir.resolve("snowflake").toString();
        SnowflakeException.DeviceNotFound e =
            assertThrows(SnowflakeException.DeviceNotFound.class, () -> new Snowflake(p));
        assertEquals("ENOENT", e.errno);
        assertTrue(e.getMessage().contains("is the snowflake module loaded?") && e.getMessage().contains(p));
        assertThrows(SnowflakeException.DeviceNotFound.class, () -> new UuidV7(p));
    }

    @Test
    void noPermissionSaysSo(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("snowflake");
        Files.write(f, new byte[8]);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("---------"));
        Assumptions.assumeFalse(Files.isReadable(f), "this process reads a mode-000 file "
            + "(CAP_DAC_OVERRIDE): tests/clients/run.sh runs the tests without it");
        SnowflakeException.Denied e =
            assertThrows(SnowflakeException.Denied.class, () -> new Snowflake(f.toString()));
        assertEquals("EACCES", e.errno);
        assertTrue(e.getMessage().contains("group snowflake"));
    }

    /**
     * read(2) of a listening socket fails with ENOTCONN, as a read of the
     * device does while it refuses IDs: the socket's descriptor (reflection:
     * --add-opens java.base/sun.nio.ch in the pom) read through a
     * FileChannel, as a descriptor handed in would be.
     */
    @Test
    void enotconnIsRefused() throws Exception {
        try (ServerSocketChannel s = ServerSocketChannel.open()) {
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Field f = s.getClass().getDeclaredField("fd");
            f.setAccessible(true);
            FileDescriptor fd = (FileDescriptor) f.get(s);
            SnowflakeException.Refused e = assertThrows(SnowflakeException.Refused.class,
                () -> new Snowflake(new FileInputStream(fd).getChannel()).next());
            assertEquals("ENOTCONN", e.errno);
            assertTrue(e.getMessage().contains("ENOTCONN") && e.getMessage().contains("strict mode")
                && e.getMessage().contains("fenced by snowflake-agent"), e.getMessage());
        }
    }

    /**
     * Issue 24: any character device opened as the generator (/dev/hwrng gave
     * random numbers).  /dev/null, and FOREIGN_DEVICE: a node for a misc
     * device that is not ours (fuse), made by clients-test.sh with mknod.
     */
    @Test
    void refusesACharacterDeviceThatIsNotTheGenerator(@TempDir Path root) throws Exception {
        String foreign = System.getenv("FOREIGN_DEVICE");
        for (String p : new String[] {"/dev/null", foreign}) {
            SnowflakeException e = assertThrows(SnowflakeException.NotSnowflakeDevice.class,
                () -> new Snowflake(p));
            assertEquals("ENOTTY", e.errno);
            assertTrue(e.getMessage().contains("not a snowflake device"), e.getMessage());
            assertThrows(SnowflakeException.NotSnowflakeDevice.class, () -> new UuidV7(p));
        }
        // A sysfs that names the node: each reader takes only its own device.
        Files.createDirectories(root.resolve("dev/char"));
        Path link = root.resolve("dev/char/" + System.getenv("FOREIGN_DEVNUM"));
        RecordStream.sysfsRoot = root.toString();
        try {
            Files.createSymbolicLink(link, Paths.get("../../devices/virtual/misc/snowflake"));
            new Snowflake(foreign).close();
            assertThrows(SnowflakeException.NotSnowflakeDevice.class, () -> new UuidV7(foreign));
            Files.delete(link);
            Files.createSymbolicLink(link, Paths.get("../../devices/virtual/misc/uuidv7"));
            new UuidV7(foreign).close();
            assertThrows(SnowflakeException.NotSnowflakeDevice.class, () -> new Snowflake(foreign));
        } finally {
            RecordStream.sysfsRoot = "/sys";
        }
    }
}
