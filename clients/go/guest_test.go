// SPDX-License-Identifier: LGPL-2.1-or-later

//go:build guest

// Tests against the real device, built with -tags guest into a static test
// binary that tests/clients/run.sh boots in a QEMU guest
// (tests/clients/init.sh): the module loaded with strict=1 and no
// worker id (TestGuestRefused), then with GUEST_DC and GUEST_WORKER set and
// /dev/snowflake of group GUEST_GID, mode 0440 (the others).

package snowflake

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func envUint(t *testing.T, name string) uint64 {
	v, err := strconv.ParseUint(os.Getenv(name), 10, 32)
	if err != nil {
		t.Fatalf("$%s: %v", name, err)
	}
	return v
}

// Strict mode without a worker id: reads fail with ENOTCONN, explained;
// /dev/uuidv7 keeps serving.
func TestGuestRefused(t *testing.T) {
	r, err := Open(DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Next(1)
	if !errors.Is(err, ErrRefused) || !errors.Is(err, syscall.ENOTCONN) ||
		!strings.Contains(err.Error(), "strict mode") {
		t.Fatalf("a read of the refusing device: %v", err)
	}
	t.Logf("%v", err)
	u, err := OpenUUID(DefaultUUIDPath)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Next(16); err != nil {
		t.Fatalf("/dev/uuidv7 while /dev/snowflake refuses: %v", err)
	}
}

func exhaustedWaits(t *testing.T) uint64 {
	b, err := os.ReadFile("/sys/class/misc/snowflake/statistics/exhausted_waits")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// 20,000 IDs, strictly increasing, each of the datacenter and worker set.
// The module's tick is 100 ms here (time_unit_ms=100): its 4,096 IDs are
// read long before it ends, so reads find the tick used up and wait for
// the next one (exhausted_waits counts them).  Before the client opened the
// device for blocking reads, Go's poller waited forever at the first such
// read.
func TestGuestIDs(t *testing.T) {
	dc, w := envUint(t, "GUEST_DC"), envUint(t, "GUEST_WORKER")
	r, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waits := exhaustedWaits(t)
	ids, err := r.Next(20000)
	if err != nil {
		t.Fatal(err)
	}
	if n := exhaustedWaits(t) - waits; n == 0 {
		t.Errorf("no read waited for the next tick: the test missed its point")
	} else {
		t.Logf("%d reads waited for the next tick", n)
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("ID %d: %d after %d", i, id, ids[i-1])
		}
		p, err := Decode(id, DefaultLayout)
		if err != nil || p.Datacenter != dc || p.Worker != w {
			t.Fatalf("ID %d: %+v %v, want datacenter %d worker %d", id, p, err, dc, w)
		}
	}
	t.Logf("%d IDs, %d to %d", len(ids), ids[0], ids[len(ids)-1])
}

func TestGuestUUIDs(t *testing.T) {
	r, err := OpenUUID("")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	us, err := r.Next(5000)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range us {
		if i > 0 && bytes.Compare(us[i-1][:], u[:]) >= 0 {
			t.Fatalf("UUID %d: %s after %s", i, u, us[i-1])
		}
		if _, err := DecodeUUID(u); err != nil {
			t.Fatal(err)
		}
	}
}

// The child of TestGuestPermissions: opens the device, says what happened.
func TestGuestChildOpen(t *testing.T) {
	if os.Getenv("GUEST_CHILD") == "" {
		t.Skip("run by TestGuestPermissions")
	}
	r, err := Open(DefaultPath)
	if err == nil {
		_, err = r.Next(1)
		r.Close()
	}
	fmt.Printf("RESULT denied=%v err=%v\n", errors.Is(err, ErrDenied), err)
}

// As user 65534: without the device's group, EACCES, explained; with it
// (a supplementary group), IDs.
func TestGuestPermissions(t *testing.T) {
	gid := uint32(envUint(t, "GUEST_GID"))
	for _, c := range []struct {
		groups []uint32
		want   string
	}{
		{nil, "RESULT denied=true err=open /dev/snowflake: permission denied (EACCES): reading needs the group snowflake"},
		{[]uint32{gid}, "RESULT denied=false err=<nil>"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestGuestChildOpen$", "-test.v")
		cmd.Env = append(os.Environ(), "GUEST_CHILD=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: 65534, Gid: 65534, Groups: c.groups}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("groups %v: %v\n%s", c.groups, err, out)
		}
	}
}
