// SPDX-License-Identifier: LGPL-2.1-or-later

// go test tests, run by tests/clients/run.sh.  The recorded streams come
// from the environment: SNOWFLAKE_DEVICE and SNOWFLAKE_UUID_DEVICE (a file,
// or a FIFO written in 13-byte pieces), IDS_FILE and UUIDS_FILE (what they
// hold), DECODED, DECODED_CUSTOM and UUIDS_DECODED (`snowflake decode
// --json` of some of them), CUSTOM_BITS/CUSTOM_EPOCH/CUSTOM_UNIT.
package snowflake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func lines(t *testing.T, env string) []string {
	t.Helper()
	b, err := os.ReadFile(os.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestReadsTheRecordedIDsAcrossShortReads(t *testing.T) {
	var want []uint64
	for _, s := range lines(t, "IDS_FILE") {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	r, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next(len(want))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ID %d: %d, want %d", i, got[i], want[i])
		}
	}
}

func TestReadsTheRecordedUUIDsAcrossShortReads(t *testing.T) {
	want := lines(t, "UUIDS_FILE")
	r, err := OpenUUID("")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next(len(want))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("UUID %d: %s, want %s", i, got[i], want[i])
		}
		if i > 0 && bytes.Compare(got[i-1][:], got[i][:]) >= 0 {
			t.Fatalf("UUID %d is not above the one before", i)
		}
	}
}

// decodedLike checks that Decode with l gives the CLI's JSON lines of env.
func decodedLike(t *testing.T, env string, l Layout) {
	cli := lines(t, env)
	if len(cli) < 2 {
		t.Fatal("no decoded IDs")
	}
	for _, line := range cli {
		var c struct{ ID string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		id, err := strconv.ParseUint(c.ID, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Decode(id, l)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(p); string(b) != line {
			t.Errorf("%s: %s, the CLI says %s", c.ID, b, line)
		}
	}
}

func TestDecodeAgreesWithTheCLI(t *testing.T) { decodedLike(t, "DECODED", DefaultLayout) }

func TestDecodeWithAnotherLayoutAgreesWithTheCLI(t *testing.T) {
	var l Layout
	if _, err := fmt.Sscanf(os.Getenv("CUSTOM_BITS"), "%d/%d/%d/%d", &l.TimestampBits,
		&l.DatacenterBits, &l.WorkerBits, &l.SequenceBits); err != nil {
		t.Fatal(err)
	}
	l.EpochMs, _ = strconv.ParseUint(os.Getenv("CUSTOM_EPOCH"), 10, 64)
	l.TimeUnitMs, _ = strconv.ParseUint(os.Getenv("CUSTOM_UNIT"), 10, 64)
	decodedLike(t, "DECODED_CUSTOM", l)
}

func TestDecodeUUIDAgreesWithTheCLI(t *testing.T) {
	cli := lines(t, "UUIDS_DECODED")
	if len(cli) < 2 {
		t.Fatal("no decoded UUIDs")
	}
	for _, line := range cli {
		var c struct{ UUID string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		u, err := ParseUUID(c.UUID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodeUUID(u)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(p); string(b) != line {
			t.Errorf("%s, the CLI says %s", b, line)
		}
	}
	v4, _ := ParseUUID("0189e2b6-1f0e-4c4b-8c2a-3b6f0e2a1d77")
	if _, err := DecodeUUID(v4); err == nil || !strings.Contains(err.Error(), "not a UUIDv7") {
		t.Errorf("a UUIDv4: %v", err)
	}
}

func TestIDsAreUnsigned64Bit(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ids")
	b := make([]byte, 19)
	hostOrder.PutUint64(b, ^uint64(0))
	hostOrder.PutUint64(b[8:], 1<<63)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.Next(2); err != nil || got[0] != ^uint64(0) || got[1] != 1<<63 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := r.Next(1); err == nil || !strings.Contains(err.Error(), "end of file") {
		t.Fatalf("3 bytes are no ID: %v", err)
	}
	if p, err := Decode(1<<63-1, DefaultLayout); err != nil || p.Timestamp != 1<<41-1 {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := Decode(1<<63, DefaultLayout); err == nil ||
		!strings.Contains(err.Error(), "above the 41/5/5/12 layout") {
		t.Fatalf("bit 63: %v", err)
	}
	if b, _ := json.Marshal(struct {
		IDs []uint64 `json:"ids"`
		ID  uint64   `json:"id,string"`
	}{[]uint64{1}, ^uint64(0)}); string(b) != `{"ids":[1],"id":"18446744073709551615"}` {
		t.Fatalf("%s", b)
	}
}

func TestNoDeviceSaysSo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snowflake")
	_, err := Open(p)
	if !errors.Is(err, ErrNoDevice) || !errors.Is(err, syscall.ENOENT) ||
		!strings.Contains(err.Error(), "is the snowflake module loaded?") || !strings.Contains(err.Error(), p) {
		t.Fatalf("%v", err)
	}
	if _, err := OpenUUID(p); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("%v", err)
	}
}

func TestNoPermissionSaysSo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snowflake")
	if err := os.WriteFile(p, make([]byte, 8), 0); err != nil {
		t.Fatal(err)
	}
	if syscall.Access(p, 4) == nil {
		t.Skip("this process reads a mode-000 file (CAP_DAC_OVERRIDE): " +
			"tests/clients/run.sh runs the tests without it")
	}
	_, err := Open(p)
	if !errors.Is(err, ErrDenied) || !errors.Is(err, syscall.EACCES) ||
		!strings.Contains(err.Error(), "group snowflake") {
		t.Fatalf("%v", err)
	}
}

// read(2) of a listening socket fails with ENOTCONN, as a read of the
// device does while it refuses IDs.
func TestENOTCONNIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = FromFile(f).Next(1)
	if !errors.Is(err, ErrRefused) || !errors.Is(err, syscall.ENOTCONN) ||
		!strings.Contains(err.Error(), "strict mode") || !strings.Contains(err.Error(), "fenced by snowflake-agent") {
		t.Fatalf("%v", err)
	}
}

// Signals arrive (every ms) while a read waits on a FIFO whose writer
// starts after 300 ms: the IDs still all arrive, in order.
func TestASignalDoesNotBreakARead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 512)
	data := make([]byte, 8*len(want))
	for i := range want {
		want[i] = uint64(1000 + i)
		hostOrder.PutUint64(data[8*i:], want[i])
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		for i := 0; i < len(data); i += 13 {
			end := i + 13
			if end > len(data) {
				end = len(data)
			}
			w.Write(data[i:end])
			time.Sleep(500 * time.Microsecond)
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				syscall.Kill(os.Getpid(), syscall.SIGUSR1)
			}
		}
	}()
	r, err := Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next(len(want))
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ID %d: %d, want %d", i, got[i], want[i])
		}
	}
}

// Issue 24: any character device opened as the generator (/dev/hwrng gave
// random numbers).  /dev/null, and FOREIGN_DEVICE: a node for a misc device
// that is not ours (fuse), made by clients-test.sh with mknod.
func TestRefusesACharacterDeviceThatIsNotTheGenerator(t *testing.T) {
	foreign := os.Getenv("FOREIGN_DEVICE")
	for _, p := range []string{"/dev/null", foreign} {
		if _, err := Open(p); !errors.Is(err, ErrNotDevice) ||
			!strings.Contains(err.Error(), "not a snowflake device") {
			t.Errorf("Open(%s): %v, want ErrNotDevice", p, err)
		}
		if _, err := OpenUUID(p); !errors.Is(err, ErrNotDevice) {
			t.Errorf("OpenUUID(%s): %v, want ErrNotDevice", p, err)
		}
	}
	// A sysfs that names the node: each reader takes only its own device.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "dev", "char"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "dev", "char", os.Getenv("FOREIGN_DEVNUM"))
	sysfsRoot = root
	defer func() { sysfsRoot = "/sys" }()
	for _, name := range []string{"snowflake", "uuidv7"} {
		os.Remove(link)
		if err := os.Symlink("../../devices/virtual/misc/"+name, link); err != nil {
			t.Fatal(err)
		}
		r, err := Open(foreign)
		u, uerr := OpenUUID(foreign)
		if name == "snowflake" && (err != nil || !errors.Is(uerr, ErrNotDevice)) ||
			name == "uuidv7" && (uerr != nil || !errors.Is(err, ErrNotDevice)) {
			t.Errorf("sysfs names it %s: Open %v, OpenUUID %v", name, err, uerr)
		}
		if err == nil {
			r.Close()
		}
		if uerr == nil {
			u.Close()
		}
	}
}
