package submit

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/iodag/iodag/dag"
)

// TestReportJSON: a report's JSON reads back into the same report, an
// errno without a name (ERESTARTSYS, 512) and each node's error text
// included.
func TestReportJSON(t *testing.T) {
	want := Report{Name: "g", Mode: Link, Repeat: 1, Counts: Counts{OK: 1, Failed: 2},
		Nodes: []NodeResult{
			{ID: "a", Op: dag.OpRead, Status: StatusOK, Res: 4096, Digest: 0xabcd},
			{ID: "b", Op: dag.OpOpen, Status: StatusFailed, Res: -2, Errno: Errno(syscall.ENOENT),
				Err: errors.New(`node "b": open x: no such file or directory`)},
			{ID: "c", Op: dag.OpOpen, Status: StatusFailed, Res: -512, Errno: 512, Err: errors.New("errno 512")},
		}}
	data, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s) = %v", data, err)
	}
	errText := cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })
	if diff := cmp.Diff(want, got, errText); diff != "" {
		t.Errorf("report after a JSON round trip (-want +got):\n%s", diff)
	}
}

// TestErrnoText: Errno's text forms read back, and what is not one is an
// error.
func TestErrnoText(t *testing.T) {
	for _, tc := range []struct {
		text    string
		want    Errno
		wantErr bool
	}{
		{"ENOENT", Errno(syscall.ENOENT), false},
		{"errno 512", 512, false},
		{"", 0, true},
		{"errno 0", 0, true},
		{"errno x", 0, true},
		{"ENOPE", 0, true},
	} {
		var e Errno
		err := e.UnmarshalText([]byte(tc.text))
		if (err != nil) != tc.wantErr || e != tc.want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v, error %v", tc.text, e, err, tc.want, tc.wantErr)
		}
		if !tc.wantErr {
			if b, _ := e.MarshalText(); string(b) != tc.text {
				t.Errorf("MarshalText(%v) = %q, want %q", e, b, tc.text)
			}
		}
	}
}

// TestErrnoPrints: fmt prints an Errno with Error: an ok node's (0)
// printed " (errno 0)".
func TestErrnoPrints(t *testing.T) {
	for _, tc := range []struct {
		e    Errno
		want string
	}{
		{0, "[] [] []"},
		{Errno(syscall.ENOENT), "[ENOENT (no such file or directory)] [ENOENT (no such file or directory)] [ENOENT]"},
		{512, "[errno 512] [errno 512] [errno 512]"},
	} {
		if got := fmt.Sprintf("[%v] [%s] [%s]", tc.e, tc.e, tc.e.String()); got != tc.want {
			t.Errorf("Errno(%d) prints %q, want %q", int(tc.e), got, tc.want)
		}
	}
}
