// SPDX-License-Identifier: LGPL-2.1-or-later
// scripts/clients-test.sh: IDS_FILE (the recorded IDs, decimal), the stream
// in $SNOWFLAKE_DEVICE, DECODED (the CLI's `decode --json` of them).
package snowflake

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
)

func TestReadsTheRecordedIDsAcrossShortReads(t *testing.T) {
	f, err := os.Open(os.Getenv("IDS_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []uint64
	for s := bufio.NewScanner(f); s.Scan(); {
		v, err := strconv.ParseUint(s.Text(), 10, 64)
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

func TestDecodeAgreesWithTheCLI(t *testing.T) {
	f, err := os.Open(os.Getenv("DECODED"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); n++ {
		var c struct {
			ID                           string
			TS                           uint64 `json:"timestamp"`
			UMs                          uint64 `json:"unix_ms"`
			Datacenter, Worker, Sequence uint64
		}
		if err := json.Unmarshal(s.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.ParseUint(c.ID, 10, 64)
		p := Decode(id, DefaultLayout)
		if p.Timestamp != c.TS || p.UnixMs != c.UMs || p.Datacenter != c.Datacenter ||
			p.Worker != c.Worker || p.Sequence != c.Sequence {
			t.Errorf("%s: %+v, the CLI says %+v", c.ID, p, c)
		}
	}
	if n == 0 {
		t.Fatal("no decoded IDs")
	}
}

func TestENOTCONNIsRefused(t *testing.T) {
	if !errors.Is(Describe(&os.PathError{Op: "read", Path: DefaultPath, Err: syscall.ENOTCONN}), ErrRefused) {
		t.Fatal("ENOTCONN is not reported as refused")
	}
}
