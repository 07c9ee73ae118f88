<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** Whole records of a device (8-byte IDs, 16-byte UUIDs) from a stream. */
trait ReadsRecords
{
    /** @var resource */
    private $stream;
    private bool $own = true;
    private string $rest = '';   // a part of a record: from a pipe, never from the device
    public readonly string $path;

    /** Open $path (null: the environment variable, else the device). */
    public function __construct(?string $path = null)
    {
        $this->path = $path ?? (getenv(static::ENV) ?: static::DEFAULT);
        error_clear_last();
        $f = @fopen($this->path, 'rb');
        if ($f === false) {
            // PHP gives no errno for fopen: name the usual ones from the file.
            clearstatcache();
            if (!file_exists($this->path)) {
                throw error(ENOENT, $this->path);
            }
            if (!is_readable($this->path)) {
                throw error(EACCES, $this->path);
            }
            throw new SnowflakeException(0, $this->path, $this->path . ': '
                . (error_get_last()['message'] ?? 'cannot open'));
        }
        try {
            identify($f, $this->path, static::NAME);
        } catch (SnowflakeException $e) {
            fclose($f);
            throw $e;
        }
        stream_set_read_buffer($f, 0);   // one read(2) per fread: no read-ahead of IDs
        $this->stream = $f;
    }

    /** A stream already open (a descriptor handed in: php://fd/N); close() leaves it open. */
    public static function fromStream($stream): static
    {
        $r = (new \ReflectionClass(static::class))->newInstanceWithoutConstructor();
        $r->stream = $stream;
        $r->own = false;
        $r->path = stream_get_meta_data($stream)['uri'] ?? 'a stream';
        return $r;
    }

    /**
     * $n records: a read may return fewer (the device: the millisecond ran
     * out; a pipe: any number of bytes), so it loops.  A read a signal
     * interrupted (EINTR; PHP retries once, then returns nothing with no
     * error and no end of file) is read again.
     */
    private function records(int $n, int $size): array
    {
        if ($n < 1) {
            throw new \ValueError('$n must be at least 1');
        }
        $out = [];
        while (count($out) < $n) {
            error_clear_last();
            $data = @fread($this->stream, $size * ($n - count($out)));
            if ($data === false || $data === '') {
                $err = error_get_last()['message'] ?? '';
                if (preg_match('/failed with errno=(\d+)/', $err, $m)) {
                    throw error((int)$m[1], $this->path);
                }
                if (feof($this->stream)) {
                    throw new SnowflakeException(0, $this->path, 'end of file: no more records in ' . $this->path);
                }
                if ($err !== '') {
                    throw new SnowflakeException(0, $this->path, $this->path . ': ' . $err);
                }
                continue;   // EINTR
            }
            $data = $this->rest . $data;
            $whole = intdiv(strlen($data), $size) * $size;
            $this->rest = substr($data, $whole);
            for ($i = 0; $i < $whole; $i += $size) {
                $out[] = $this->record(substr($data, $i, $size));
            }
        }
        return $out;
    }

    public function close(): void
    {
        if ($this->own && is_resource($this->stream)) {
            fclose($this->stream);
        }
    }
}
