// SPDX-License-Identifier: LGPL-2.1-or-later
package dev.snowflake;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Whole records (8-byte IDs, 16-byte UUIDs) of a device, or of a channel handed in. */
abstract class RecordStream implements AutoCloseable {
    // strerror()'s texts, which is all Java keeps of an errno (the C locale's).
    private static final String[][] ERRNOS = {
        {"Transport endpoint is not connected", "ENOTCONN"},
        {"No such device or address", "ENXIO"},
        {"No such device", "ENODEV"},
        {"No such file or directory", "ENOENT"},
        {"Permission denied", "EACCES"},
        {"Operation not permitted", "EPERM"},
    };

    public final String path;
    private final ReadableByteChannel in;
    private final boolean own;
    private final int size;
    private final ByteBuffer rest;   // a part of a record: from a pipe, never from the device

    /** Where the kernel names the devices (/sys/dev/char/MAJ:MIN -> .../misc/NAME); tests change it. */
    static String sysfsRoot = "/sys";

    /**
     * A character device must be the misc device called name ("snowflake" or
     * "uuidv7"); other files (a recording, a FIFO) are read as they are.
     * Without sysfs a device cannot be identified and is refused.  Java has
     * no fstat of a channel: the path is looked at just after it was opened.
     */
    private static void identify(String path, String name) throws SnowflakeException {
        int mode;
        long rdev;
        try {
            mode = (Integer) Files.getAttribute(Path.of(path), "unix:mode");
            rdev = (Long) Files.getAttribute(Path.of(path), "unix:rdev");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException x) {
            return;   // not a device node the platform can tell: read as it is
        }
        if ((mode & 0170000) != 0020000)
            return;
        long major = ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
        long minor = (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
        String link = "";
        if (major == 10) {
            try {
                link = Files.readSymbolicLink(Path.of(sysfsRoot + "/dev/char/" + major + ":" + minor))
                    .toString();
            } catch (IOException | UnsupportedOperationException x) {
                link = "";
            }
        }
        if (!link.endsWith("/misc/" + name))
            throw new SnowflakeException.NotSnowflakeDevice(path);
    }

    RecordStream(String path, String env, String dflt, String name, int size) throws SnowflakeException {
        String e = System.getenv(env);
        this.path = path != null ? path : e != null && !e.isEmpty() ? e : dflt;
        this.size = size;
        this.rest = ByteBuffer.allocate(size);
        this.own = true;
        try {
            this.in = Files.newByteChannel(Path.of(this.path), StandardOpenOption.READ);
        } catch (NoSuchFileException x) {
            throw new SnowflakeException.DeviceNotFound("ENOENT", this.path, x);
        } catch (AccessDeniedException x) {
            throw new SnowflakeException.Denied("EACCES", this.path, x);
        } catch (IOException x) {
            throw error(x.getMessage(), x);
        }
        try {
            identify(this.path, name);
        } catch (SnowflakeException x) {
            try {
                this.in.close();
            } catch (IOException ignored) {
                // refused anyway
            }
            throw x;
        }
    }

    RecordStream(ReadableByteChannel in, int size) {
        this.path = in.toString();
        this.in = in;
        this.own = false;
        this.size = size;
        this.rest = ByteBuffer.allocate(size);
    }

    private SnowflakeException error(String message, IOException cause) {
        String m = cause instanceof FileSystemException ? ((FileSystemException) cause).getReason() : message;
        String errno = null;
        for (String[] e : ERRNOS) {
            if (m != null && m.contains(e[0])) {
                errno = e[1];
                break;
            }
        }
        if (errno == null)
            return new SnowflakeException(null, path, path + ": " + m, cause);
        switch (errno) {
        case "ENOTCONN":
            return new SnowflakeException.Refused(path, cause);
        case "EACCES":
        case "EPERM":
            return new SnowflakeException.Denied(errno, path, cause);
        default:
            return new SnowflakeException.DeviceNotFound(errno, path, cause);
        }
    }

    /**
     * Reads n records into each(): a read may return fewer (the device: the
     * millisecond ran out; a pipe: any number of bytes), so it loops.  The
     * channel retries a read a signal interrupted (EINTR).
     */
    void read(int n, java.util.function.Consumer<ByteBuffer> each) throws IOException {
        if (n < 1)
            throw new IllegalArgumentException("n must be at least 1");
        ByteBuffer buf = ByteBuffer.allocate(size * n);
        int got = 0;
        while (got < n) {
            buf.clear().limit(size * (n - got));
            int m;
            try {
                m = in.read(buf);
            } catch (IOException x) {
                throw error(x.getMessage(), x);
            }
            if (m < 0)
                throw new EOFException("end of file: no more records in " + path);
            buf.flip();
            while (buf.hasRemaining()) {
                rest.put(buf.get());
                if (!rest.hasRemaining()) {
                    rest.flip();
                    each.accept(rest);
                    rest.clear();
                    got++;
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        if (own)
            in.close();
    }
}
