// SPDX-License-Identifier: LGPL-2.1-or-later

// Package snowflake reads and decodes the IDs of /dev/snowflake and the
// UUIDs of /dev/uuidv7 (docs/clients.md).  IDs are uint64; in JSON they are
// strings (Parts.ID, `json:",string"`): JavaScript rounds numbers past 2^53.
//
//	sf, err := snowflake.Open("")    // $SNOWFLAKE_DEVICE, else /dev/snowflake
//	ids, err := sf.Next(16)          // strictly increasing
//	p, err := snowflake.Decode(ids[0], snowflake.DefaultLayout)
//
// Errors are *Error; errors.Is(err, ErrRefused) (ENOTCONN: strict mode
// without a worker id, or fenced by snowflake-agent), ErrNoDevice (the
// module is not loaded) and ErrDenied (not in the group snowflake) say
// which, and the message says what to do.  Standard library only.
package snowflake

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// DefaultPath and DefaultUUIDPath are the devices.
const (
	DefaultPath     = "/dev/snowflake"
	DefaultUUIDPath = "/dev/uuidv7"
)

// Layout is the shape of an ID (the device's: `snowflake config`).
type Layout struct {
	EpochMs, TimeUnitMs                                     uint64
	TimestampBits, DatacenterBits, WorkerBits, SequenceBits uint
}

// DefaultLayout is 41/5/5/12 from Twitter's epoch, in milliseconds.
var DefaultLayout = Layout{1288834974657, 1, 41, 5, 5, 12}

// The kinds of Error, for errors.Is.
var (
	ErrRefused  = errors.New("the device refuses IDs (ENOTCONN)")
	ErrNoDevice = errors.New("no such device")
	ErrDenied   = errors.New("permission denied")
	// ErrNotDevice: a character device that is not the generator (ENOTTY),
	// e.g. /dev/hwrng, /dev/null, or /dev/uuidv7 given as /dev/snowflake.
	ErrNotDevice = errors.New("not a snowflake device")
)

// Error is an error of the device: Op ("open" or "read"), Path and the errno.
type Error struct {
	Op, Path string
	Errno    syscall.Errno
}

func (e *Error) Error() string { return e.Op + " " + Describe(e.Errno, e.Path) }

// Unwrap gives the errno (errors.Is(err, syscall.ENOTCONN) holds).
func (e *Error) Unwrap() error { return e.Errno }

// Is matches the kinds ErrRefused, ErrNoDevice and ErrDenied.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRefused:
		return e.Errno == syscall.ENOTCONN
	case ErrNoDevice:
		return e.Errno == syscall.ENOENT || e.Errno == syscall.ENODEV || e.Errno == syscall.ENXIO
	case ErrDenied:
		return e.Errno == syscall.EACCES || e.Errno == syscall.EPERM
	case ErrNotDevice:
		return e.Errno == syscall.ENOTTY
	}
	return false
}

var errnoNames = map[syscall.Errno]string{
	syscall.ENOENT: "ENOENT", syscall.ENODEV: "ENODEV", syscall.ENXIO: "ENXIO",
	syscall.EACCES: "EACCES", syscall.EPERM: "EPERM",
}

// Describe is the message for an errno of the device at path.
func Describe(errno syscall.Errno, path string) string {
	switch errno {
	case syscall.ENOTCONN:
		return path + " refuses IDs (ENOTCONN): strict mode and no worker id yet, or fenced " +
			"by snowflake-agent (lease lost or expired, or the VM was cloned); " +
			"see `snowflake config`; /dev/uuidv7 keeps serving"
	case syscall.ENOENT, syscall.ENODEV, syscall.ENXIO:
		return fmt.Sprintf("%s: no such device (%s): is the snowflake module loaded? "+
			"(`modprobe snowflake`; in a container: --device %s)", path, errnoNames[errno], path)
	case syscall.ENOTTY:
		return path + ": not a snowflake device (ENOTTY): a character device that is not " +
			"the generator (see its /sys/dev/char entry)"
	case syscall.EACCES, syscall.EPERM:
		return fmt.Sprintf("%s: permission denied (%s): reading needs the group snowflake "+
			"(`usermod -aG snowflake USER`, SupplementaryGroups=snowflake in a unit, "+
			"--group-add in a container)", path, errnoNames[errno])
	}
	return path + ": " + errno.Error()
}

func wrap(op, path string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &Error{Op: op, Path: path, Errno: errno}
	}
	return err
}

// stream reads whole records of size bytes.
type stream struct {
	Path string
	f    *os.File
	own  bool
	size int
	rest []byte // a part of a record: from a pipe, never from the device
}

// sysfsRoot is where the kernel names the devices (/sys/dev/char/MAJ:MIN ->
// .../misc/NAME); the tests point it at a fake tree.
var sysfsRoot = "/sys"

// identify: a character device must be the misc device called name
// ("snowflake" or "uuidv7"); other files (a recording, a FIFO) are read as
// they are.  Without sysfs a device cannot be identified and is refused.
func identify(fd int, name string) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return nil
	}
	rdev := uint64(st.Rdev)
	major := (rdev>>8)&0xfff | (rdev>>32)&^uint64(0xfff)
	minor := rdev&0xff | (rdev>>12)&^uint64(0xff)
	if major == 10 {
		link, err := os.Readlink(fmt.Sprintf("%s/dev/char/%d:%d", sysfsRoot, major, minor))
		if err == nil && strings.HasSuffix(link, "/misc/"+name) {
			return nil
		}
	}
	return syscall.ENOTTY
}

func open(path, env, dflt, name string, size int) (stream, error) {
	if path == "" {
		path = os.Getenv(env)
	}
	if path == "" {
		path = dflt
	}
	// Blocking reads, not Go's poller: os.Open would put the descriptor
	// in non-blocking mode under edge-triggered epoll, and a read that
	// finds the tick used up would fail with EAGAIN and wait for the
	// device's epoll event at the next tick (sent since 6b15e4f: a
	// non-blocking read's EAGAIN arms the tick timer, as poll() does;
	// before, the goroutine hung).  A blocking read sleeps in the kernel
	// until the next tick instead, with no trip through the poller.
	// os.NewFile keeps a blocking descriptor off the poller.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return stream{}, wrap("open", path, err)
	}
	if err := identify(fd, name); err != nil {
		syscall.Close(fd)
		return stream{}, wrap("open", path, err)
	}
	return stream{Path: path, f: os.NewFile(uintptr(fd), path), own: true, size: size}, nil
}

// read returns n records: a read may return fewer (the device: the
// millisecond ran out; a pipe: any number of bytes), so it loops.  os.File
// retries a read a signal interrupted (EINTR).  Each read blocks an OS
// thread while the device waits for its next tick (open above).
func (s *stream) read(n int, each func([]byte)) error {
	if n < 1 {
		return fmt.Errorf("snowflake: %d records asked", n)
	}
	buf := make([]byte, s.size*n)
	for got := 0; got < n; {
		m, err := s.f.Read(buf[:s.size*(n-got)])
		if m > 0 {
			data := append(s.rest, buf[:m]...)
			whole := len(data) / s.size * s.size
			for i := 0; i < whole; i += s.size {
				each(data[i : i+s.size])
				got++
			}
			s.rest = append([]byte(nil), data[whole:]...)
		}
		if err == io.EOF {
			return fmt.Errorf("snowflake: end of file: no more records in %s", s.Path)
		}
		if err != nil {
			return wrap("read", s.Path, err)
		}
	}
	return nil
}

func (s *stream) Close() error {
	if !s.own {
		return nil
	}
	return s.f.Close()
}

// Reader reads IDs; not for concurrent use (one per goroutine, or a lock).
type Reader struct{ stream }

// Open opens the device at path ("": $SNOWFLAKE_DEVICE, else DefaultPath).
func Open(path string) (*Reader, error) {
	s, err := open(path, "SNOWFLAKE_DEVICE", DefaultPath, "snowflake", 8)
	if err != nil {
		return nil, err
	}
	return &Reader{s}, nil
}

// FromFile reads IDs from a descriptor already open (a descriptor handed
// in); Close does not close it.  Open the device without O_NONBLOCK and
// make the file with os.NewFile (see open): a file of os.Open would put
// each read that finds the tick used up through Go's poller (EAGAIN, then
// the device's epoll event at the next tick) instead of one blocking read.
func FromFile(f *os.File) *Reader {
	return &Reader{stream{Path: f.Name(), f: f, size: 8}}
}

var hostOrder binary.ByteOrder = func() binary.ByteOrder {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}()

// Next returns n IDs, strictly increasing.
func (r *Reader) Next(n int) ([]uint64, error) {
	out := make([]uint64, 0, n)
	err := r.read(n, func(b []byte) { out = append(out, hostOrder.Uint64(b)) })
	return out, err
}

// Close closes the device.
func (r *Reader) Close() error { return r.stream.Close() }

// UUID is a UUIDv7 in its binary form (big-endian, RFC 9562): as bytes,
// each is greater than the ones before it.  In JSON: its canonical string.
type UUID [16]byte

func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	hex.Encode(b[9:13], u[4:6])
	hex.Encode(b[14:18], u[6:8])
	hex.Encode(b[19:23], u[8:10])
	hex.Encode(b[24:], u[10:])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}

// MarshalText gives the canonical form.
func (u UUID) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// ParseUUID reads the canonical 8-4-4-4-12 form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("snowflake: %q is not a UUID", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("snowflake: %q is not a UUID", s)
	}
	return u, nil
}

// UUIDReader reads UUIDv7s of /dev/uuidv7.
type UUIDReader struct{ stream }

// OpenUUID opens /dev/uuidv7 at path ("": $SNOWFLAKE_UUID_DEVICE, else DefaultUUIDPath).
func OpenUUID(path string) (*UUIDReader, error) {
	s, err := open(path, "SNOWFLAKE_UUID_DEVICE", DefaultUUIDPath, "uuidv7", 16)
	if err != nil {
		return nil, err
	}
	return &UUIDReader{s}, nil
}

// Next returns n UUIDv7s, strictly increasing.
func (r *UUIDReader) Next(n int) ([]UUID, error) {
	out := make([]UUID, 0, n)
	err := r.read(n, func(b []byte) {
		var u UUID
		copy(u[:], b)
		out = append(out, u)
	})
	return out, err
}

// Close closes the device.
func (r *UUIDReader) Close() error { return r.stream.Close() }

const maxTimeMs = 253402300799999 // 9999-12-31T23:59:59.999Z

// isoTime is the time as `snowflake decode` writes it; nil past year 9999.
func isoTime(unixMs uint64) *string {
	if unixMs > maxTimeMs {
		return nil
	}
	s := time.UnixMilli(int64(unixMs)).UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}

// Parts of an ID: json.Marshal gives the line of `snowflake decode --json`.
type Parts struct {
	ID         uint64  `json:"id,string"`
	Time       *string `json:"time"` // nil past year 9999
	UnixMs     uint64  `json:"unix_ms"`
	Timestamp  uint64  `json:"timestamp"`
	Datacenter uint64  `json:"datacenter"`
	Worker     uint64  `json:"worker"`
	Sequence   uint64  `json:"sequence"`
}

// Decode splits an ID with a layout; an error for an ID with bits above it.
func Decode(id uint64, l Layout) (Parts, error) {
	mask := func(b uint) uint64 { return 1<<b - 1 }
	total := l.TimestampBits + l.DatacenterBits + l.WorkerBits + l.SequenceBits
	if total < 64 && id>>total != 0 {
		return Parts{}, fmt.Errorf("snowflake: %d has bits set above the %d/%d/%d/%d layout",
			id, l.TimestampBits, l.DatacenterBits, l.WorkerBits, l.SequenceBits)
	}
	ts := id >> (l.SequenceBits + l.WorkerBits + l.DatacenterBits)
	ms := l.EpochMs + ts*l.TimeUnitMs
	return Parts{
		ID:         id,
		Time:       isoTime(ms),
		UnixMs:     ms,
		Timestamp:  ts,
		Datacenter: id >> (l.SequenceBits + l.WorkerBits) & mask(l.DatacenterBits),
		Worker:     id >> l.SequenceBits & mask(l.WorkerBits),
		Sequence:   id & mask(l.SequenceBits),
	}, nil
}

// UUIDParts is the time of a UUIDv7, as `snowflake decode --json` gives it.
type UUIDParts struct {
	UUID    UUID    `json:"uuid"`
	Version int     `json:"version"`
	Time    *string `json:"time"`
	UnixMs  uint64  `json:"unix_ms"`
}

// DecodeUUID gives the time of a UUIDv7; an error for another version.
func DecodeUUID(u UUID) (UUIDParts, error) {
	if u[6]>>4 != 7 || u[8]>>6 != 2 {
		return UUIDParts{}, fmt.Errorf("snowflake: %s is not a UUIDv7", u)
	}
	var ms uint64
	for _, b := range u[:6] {
		ms = ms<<8 | uint64(b)
	}
	return UUIDParts{UUID: u, Version: 7, Time: isoTime(ms), UnixMs: ms}, nil
}
