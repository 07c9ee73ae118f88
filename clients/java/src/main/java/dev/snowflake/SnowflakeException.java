// SPDX-License-Identifier: LGPL-2.1-or-later
package dev.snowflake;

import java.io.IOException;

/** An error of the device, with a message that says what to do. */
public class SnowflakeException extends IOException {
    private static final long serialVersionUID = 1L;

    /** The errno name ("ENOTCONN", "ENOENT", "EACCES", ...) when known, else null. */
    public final String errno;
    public final String path;

    SnowflakeException(String errno, String path, String message, Throwable cause) {
        super(message, cause);
        this.errno = errno;
        this.path = path;
    }

    /** No such device: the module is not loaded (ENOENT, ENODEV, ENXIO). */
    public static final class DeviceNotFound extends SnowflakeException {
        private static final long serialVersionUID = 1L;

        DeviceNotFound(String errno, String path, Throwable cause) {
            super(errno, path, Snowflake.describe(errno, path), cause);
        }
    }

    /** Not in the group that reads the device (EACCES, EPERM). */
    public static final class Denied extends SnowflakeException {
        private static final long serialVersionUID = 1L;

        Denied(String errno, String path, Throwable cause) {
            super(errno, path, Snowflake.describe(errno, path), cause);
        }
    }

    /**
     * The device refuses IDs (ENOTCONN): strict mode without a worker id, or
     * fenced by snowflake-agent.  Retrying later may succeed; /dev/uuidv7
     * keeps serving.
     */
    public static final class Refused extends SnowflakeException {
        private static final long serialVersionUID = 1L;

        Refused(String path, Throwable cause) {
            super("ENOTCONN", path, Snowflake.describe("ENOTCONN", path), cause);
        }
    }

    /**
     * A character device that is not the generator (ENOTTY): another misc
     * device (/dev/hwrng, /dev/fuse), /dev/null, or /dev/uuidv7 given as
     * /dev/snowflake and the reverse.
     */
    public static final class NotSnowflakeDevice extends SnowflakeException {
        private static final long serialVersionUID = 1L;

        NotSnowflakeDevice(String path) {
            super("ENOTTY", path, Snowflake.describe("ENOTTY", path), null);
        }
    }
}
