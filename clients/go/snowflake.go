// SPDX-License-Identifier: LGPL-2.1-or-later

// Package snowflake reads and decodes IDs of /dev/snowflake
// (docs/clients.md).  IDs are uint64.
//
//	sf, err := snowflake.Open("")    // $SNOWFLAKE_DEVICE, else /dev/snowflake
//	ids, err := sf.Next(16)          // increasing
//	p := snowflake.Decode(ids[0], snowflake.DefaultLayout)
package snowflake

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// DefaultPath is the device.
const DefaultPath = "/dev/snowflake"

// Layout is the shape of an ID (the device's: `snowflake config`).
type Layout struct {
	EpochMs, TimeUnitMs                                     uint64
	TimestampBits, DatacenterBits, WorkerBits, SequenceBits uint
}

// DefaultLayout is 41/5/5/12 from Twitter's epoch, in milliseconds.
var DefaultLayout = Layout{1288834974657, 1, 41, 5, 5, 12}

// ErrRefused is the device refusing IDs (ENOTCONN): strict mode without a
// worker id, or fenced by snowflake-agent.
var ErrRefused = errors.New("the device refuses IDs (ENOTCONN): strict mode without a worker id, " +
	"or fenced by snowflake-agent; see `snowflake config`")

// Describe maps an error of the device to a clear one.
func Describe(err error) error {
	if errors.Is(err, syscall.ENOTCONN) {
		return ErrRefused
	}
	return err
}

// Reader reads IDs; not for concurrent use (one per goroutine, or a lock).
type Reader struct {
	Path string
	f    *os.File
	rest []byte // a part of an ID (from a pipe, never the device)
}

// Open opens the device at path ("": $SNOWFLAKE_DEVICE, else DefaultPath).
func Open(path string) (*Reader, error) {
	if path == "" {
		path = os.Getenv("SNOWFLAKE_DEVICE")
	}
	if path == "" {
		path = DefaultPath
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &Reader{Path: path, f: f}, nil
}

func hostOrder() binary.ByteOrder {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

// Next returns n IDs: a read may return fewer (the millisecond ran out): it loops.
func (r *Reader) Next(n int) ([]uint64, error) {
	out := make([]uint64, 0, n)
	order := hostOrder()
	buf := make([]byte, 8*n)
	for len(out) < n {
		got, err := r.f.Read(buf[:8*(n-len(out))])
		if err == io.EOF {
			return out, fmt.Errorf("end of file: no more IDs in %s", r.Path)
		}
		if err != nil {
			return out, Describe(err)
		}
		data := append(r.rest, buf[:got]...)
		whole := len(data) / 8 * 8
		for i := 0; i < whole; i += 8 {
			out = append(out, order.Uint64(data[i:]))
		}
		r.rest = append([]byte(nil), data[whole:]...)
	}
	return out, nil
}

// Close closes the device.
func (r *Reader) Close() error { return r.f.Close() }

// Parts of an ID.
type Parts struct {
	Timestamp, UnixMs            uint64
	Datacenter, Worker, Sequence uint64
}

// Decode splits an ID with a layout.
func Decode(id uint64, l Layout) Parts {
	mask := func(b uint) uint64 { return 1<<b - 1 }
	ts := id >> (l.SequenceBits + l.WorkerBits + l.DatacenterBits)
	return Parts{
		Timestamp:  ts,
		UnixMs:     l.EpochMs + ts*l.TimeUnitMs,
		Datacenter: id >> (l.SequenceBits + l.WorkerBits) & mask(l.DatacenterBits),
		Worker:     id >> l.SequenceBits & mask(l.WorkerBits),
		Sequence:   id & mask(l.SequenceBits),
	}
}
