<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
// PHPUnit tests of snowflake-dev/device, run by tests/clients/run.sh on
// the package installed by Composer into a scratch project (its autoloader
// is the bootstrap).  The recorded streams come from the environment:
// SNOWFLAKE_DEVICE and SNOWFLAKE_UUID_DEVICE (a file, or a FIFO written in
// 13-byte pieces), IDS_FILE and UUIDS_FILE (what they hold), DECODED,
// DECODED_CUSTOM and UUIDS_DECODED (`snowflake decode --json` of some of
// them), CUSTOM_BITS/CUSTOM_EPOCH/CUSTOM_UNIT (the custom layout).
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Snowflake\Denied;
use Snowflake\DeviceNotFound;
use Snowflake\NotSnowflakeDevice;
use Snowflake\Reader;
use Snowflake\Refused;
use Snowflake\SnowflakeException;
use Snowflake\UuidReader;

final class ReaderTest extends TestCase
{
    private static function lines(string $var): array
    {
        return file(getenv($var), FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES);
    }

    private static function tmpdir(): string
    {
        $d = sys_get_temp_dir() . '/snowflake-php-' . getmypid() . '-' . bin2hex(random_bytes(4));
        mkdir($d);
        return $d;
    }

    public function testReadsTheRecordedIdsAcrossShortReads(): void
    {
        $want = array_map('intval', self::lines('IDS_FILE'));
        $sf = new Reader();
        $got = $sf->next(count($want));
        $sf->close();
        $this->assertSame($want, $got);
    }

    public function testReadsTheRecordedUuidsAcrossShortReads(): void
    {
        $want = self::lines('UUIDS_FILE');
        $u = new UuidReader();
        $got = $u->next(count($want));
        $u->close();
        $this->assertSame($want, $got);
    }

    public function testDecodeAgreesWithTheCli(): void
    {
        $cli = self::lines('DECODED');
        $this->assertGreaterThan(1, count($cli));
        foreach ($cli as $line) {
            $c = json_decode($line, true);
            $this->assertSame($c, Snowflake\decode($c['id']));
            $this->assertSame($c, Snowflake\decode((int)$c['id']));
            // JSON: the CLI's line (the ID a string).
            $this->assertSame($line, json_encode(Snowflake\decode($c['id']), JSON_UNESCAPED_SLASHES));
        }
    }

    public function testDecodeWithAnotherLayoutAgreesWithTheCli(): void
    {
        [$t, $d, $w, $s] = array_map('intval', explode('/', getenv('CUSTOM_BITS')));
        $layout = ['epoch_ms' => (int)getenv('CUSTOM_EPOCH'), 'time_unit_ms' => (int)getenv('CUSTOM_UNIT'),
            'timestamp_bits' => $t, 'datacenter_bits' => $d, 'worker_bits' => $w, 'sequence_bits' => $s];
        $cli = self::lines('DECODED_CUSTOM');
        $this->assertGreaterThan(1, count($cli));
        foreach ($cli as $line) {
            $c = json_decode($line, true);
            $this->assertSame($c, Snowflake\decode($c['id'], $layout));
        }
    }

    public function testDecodeUuidAgreesWithTheCli(): void
    {
        $cli = self::lines('UUIDS_DECODED');
        $this->assertGreaterThan(1, count($cli));
        foreach ($cli as $line) {
            $c = json_decode($line, true);
            $this->assertSame($c, Snowflake\decodeUuid($c['uuid']));
            $this->assertSame($c, Snowflake\decodeUuid(hex2bin(str_replace('-', '', $c['uuid']))));
        }
        $this->expectExceptionMessage('not a UUIDv7');
        Snowflake\decodeUuid('0189e2b6-1f0e-4c4b-8c2a-3b6f0e2a1d77');
    }

    public function testIdsAreUnsigned64Bit(): void
    {
        $d = self::tmpdir();
        $le = pack('S', 1) === "\x01\x00";
        file_put_contents("$d/ids", str_repeat("\xff", 8) . ($le ? "\0\0\0\0\0\0\0\x80" : "\x80\0\0\0\0\0\0\0") . "\1\2\3");
        $sf = new Reader("$d/ids");
        $got = $sf->next(2);
        $this->assertSame(['18446744073709551615', '9223372036854775808'], array_map('Snowflake\unsigned', $got));
        $this->assertSame('["18446744073709551615","9223372036854775808"]', Snowflake\toJsonIds($got));
        try {
            $sf->next();
            $this->fail('3 bytes are no ID');
        } catch (SnowflakeException $e) {
            $this->assertStringContainsString('end of file', $e->getMessage());
        }
        $sf->close();
        unlink("$d/ids");
        rmdir($d);
        $this->assertSame((1 << 41) - 1, Snowflake\decode(PHP_INT_MAX)['timestamp']);
        foreach ([$got[0], $got[1], '9223372036854775808', '18446744073709551615'] as $id) {
            try {
                Snowflake\decode($id);
                $this->fail("$id decoded");
            } catch (\DomainException $e) {
                $this->assertStringContainsString('above the 41/5/5/12 layout', $e->getMessage());
            }
        }
        $this->expectExceptionMessage('not an unsigned 64-bit ID');
        Snowflake\decode('18446744073709551616');
    }

    public function testNoDeviceSaysSo(): void
    {
        $p = sys_get_temp_dir() . '/no-snowflake-' . getmypid();
        try {
            new Reader($p);
            $this->fail('opened');
        } catch (DeviceNotFound $e) {
            $this->assertSame(Snowflake\ENOENT, $e->getCode());
            $this->assertStringContainsString('is the snowflake module loaded?', $e->getMessage());
            $this->assertStringContainsString($p, $e->getMessage());
        }
        $this->expectException(DeviceNotFound::class);
        new UuidReader($p);
    }

    public function testNoPermissionSaysSo(): void
    {
        $d = self::tmpdir();
        file_put_contents("$d/snowflake", str_repeat("\0", 8));
        chmod("$d/snowflake", 0);
        $readable = is_readable("$d/snowflake") && @file_get_contents("$d/snowflake") !== false;
        try {
            if ($readable) {
                $this->markTestSkipped('this process reads a mode-000 file (CAP_DAC_OVERRIDE): '
                    . 'tests/clients/run.sh runs the tests without it');
            }
            new Reader("$d/snowflake");
            $this->fail('opened');
        } catch (Denied $e) {
            $this->assertSame(Snowflake\EACCES, $e->getCode());
            $this->assertStringContainsString('group snowflake', $e->getMessage());
        } finally {
            unlink("$d/snowflake");
            rmdir($d);
        }
    }

    public function testAReadErrorCarriesItsErrno(): void
    {
        // PHP gives the errno of a failed read(2) of a file or a device
        // only in its notice ("failed with errno=N"): a directory's read
        // fails with EISDIR (21) there, the refusing device's with ENOTCONN
        // (the socket streams of PHP keep the errno to themselves, so the
        // device's ENOTCONN is not reproduced here).
        $r = new Reader(sys_get_temp_dir());
        try {
            $r->next();
            $this->fail('read');
        } catch (SnowflakeException $e) {
            $this->assertSame(21, $e->getCode());
            $this->assertStringContainsString(sys_get_temp_dir(), $e->getMessage());
        } finally {
            $r->close();
        }
    }

    public function testEnotconnIsRefused(): void
    {
        $e = Snowflake\error(Snowflake\ENOTCONN, '/dev/snowflake');
        $this->assertInstanceOf(Refused::class, $e);
        $this->assertSame(Snowflake\ENOTCONN, $e->getCode());
        $this->assertStringContainsString('ENOTCONN', $e->getMessage());
        $this->assertStringContainsString('strict mode', $e->getMessage());
        $this->assertStringContainsString('fenced by snowflake-agent', $e->getMessage());
    }

    /**
     * Signals without SA_RESTART (every 10 ms, from the writer) while a read
     * waits on a FIFO: PHP retries an interrupted read once, then returns
     * nothing with neither an error nor the end of the file.  The client
     * reads again: the IDs all arrive, in order.
     */
    public function testASignalDoesNotBreakARead(): void
    {
        $d = self::tmpdir();
        $fifo = "$d/fifo";
        $this->assertTrue(posix_mkfifo($fifo, 0600));
        $ids = range(1000, 1511);
        $le = pack('S', 1) === "\x01\x00";
        $data = implode('', array_map(fn ($i) => pack($le ? 'P' : 'J', $i), $ids));
        $seen = 0;
        pcntl_async_signals(true);
        pcntl_signal(SIGUSR1, function () use (&$seen) {
            $seen++;
        }, false);
        $writer = proc_open([PHP_BINARY, '-r', '
            [$fifo, $ppid] = [$argv[1], (int)$argv[2]];
            $data = stream_get_contents(STDIN);
            $f = fopen($fifo, "wb");
            usleep(50000);
            for ($i = 0; $i < 20; $i++) {
                posix_kill($ppid, SIGUSR1);
                usleep(10000);
            }
            for ($i = 0; $i < strlen($data); $i += 13) {
                fwrite($f, substr($data, $i, 13));
                fflush($f);
                if ($i % 1300 == 0) {
                    posix_kill($ppid, SIGUSR1);
                    usleep(2000);
                }
            }
            fclose($f);', $fifo, (string)getmypid()], [0 => ['pipe', 'r']], $pipes);
        fwrite($pipes[0], $data);
        fclose($pipes[0]);
        try {
            $sf = new Reader($fifo);
            $got = $sf->next(count($ids));
            $sf->close();
        } finally {
            proc_terminate($writer);
            proc_close($writer);
            pcntl_signal(SIGUSR1, SIG_DFL);
            unlink($fifo);
            rmdir($d);
        }
        $this->assertSame($ids, $got);
        $this->assertGreaterThan(0, $seen);
    }

    /**
     * Issue 24: any character device opened as the generator (/dev/hwrng
     * gave random numbers).  /dev/null, and FOREIGN_DEVICE: a node for a
     * misc device that is not ours (fuse), made by clients-test.sh.
     */
    public function testRefusesACharacterDeviceThatIsNotTheGenerator(): void
    {
        $foreign = getenv('FOREIGN_DEVICE');
        foreach ([Reader::class, UuidReader::class] as $cls) {
            foreach (['/dev/null', $foreign] as $p) {
                try {
                    new $cls($p);
                    $this->fail("$cls($p) opened");
                } catch (NotSnowflakeDevice $e) {
                    $this->assertSame(25, $e->getCode());
                    $this->assertStringContainsString('not a snowflake device', $e->getMessage());
                }
            }
        }
        // A sysfs that names the node: each reader takes only its own device.
        $root = sys_get_temp_dir() . '/snowflake-sysfs-' . getmypid();
        @mkdir("$root/dev/char", 0755, true);
        $link = "$root/dev/char/" . getenv('FOREIGN_DEVNUM');
        \Snowflake\sysfsRoot($root);
        try {
            foreach ([['snowflake', Reader::class, UuidReader::class],
                ['uuidv7', UuidReader::class, Reader::class]] as [$name, $good, $other]) {
                @unlink($link);
                $this->assertTrue(symlink("../../devices/virtual/misc/$name", $link));
                (new $good($foreign))->close();
                try {
                    new $other($foreign);
                    $this->fail("$other opened a node named $name");
                } catch (NotSnowflakeDevice $e) {
                    $this->assertSame(25, $e->getCode());
                }
            }
        } finally {
            \Snowflake\sysfsRoot('/sys');
            @unlink($link);
            @rmdir("$root/dev/char");
            @rmdir("$root/dev");
            @rmdir($root);
        }
    }
}
