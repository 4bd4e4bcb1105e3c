package dag

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Op is the io_uring operation a node performs.
type Op uint8

// The operations, in spec order; String gives each one's spec name, and
// NodeSpec lists the fields each one takes.
const (
	OpNop Op = iota
	OpRead
	OpWrite
	OpFsync
	OpOpen
	OpStatx
	OpClose
	OpTimeout
	OpUnlink
	OpMkdir
	OpRename
	// OpReadFile reads a whole file of unknown size (Builder.ReadFile):
	// it opens it confined to the run's root, reads it to its end and
	// closes it, in one node.
	OpReadFile
	// OpGo runs a Go function (Builder.Go) instead of an io_uring request.
	// It stays last.
	OpGo
	numOps

	// The op of a spec's node without one, or with a name no op has.
	opMissing Op = 254
	opUnknown Op = 255
)

// String returns the op's spec name ("nop", "read", ...).
func (o Op) String() string {
	switch o {
	case OpNop:
		return "nop"
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFsync:
		return "fsync"
	case OpOpen:
		return "open"
	case OpStatx:
		return "statx"
	case OpClose:
		return "close"
	case OpTimeout:
		return "timeout"
	case OpUnlink:
		return "unlink"
	case OpMkdir:
		return "mkdir"
	case OpRename:
		return "rename"
	case OpReadFile:
		return "readfile"
	case OpGo:
		return "go"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText writes the op's spec name.
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an op's spec name.
func (o *Op) UnmarshalText(b []byte) error {
	v, ok := ParseOp(string(b))
	if !ok {
		return fmt.Errorf("unknown op %q", b)
	}
	*o = v
	return nil
}

// ParseOp returns the Op whose spec name is s.
func ParseOp(s string) (Op, bool) {
	for o := OpNop; o < numOps; o++ {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}

// EdgeKind says what a dependent waits for.
type EdgeKind uint8

const (
	// After runs the dependent only if the predecessor succeeded (IOSQE_IO_LINK).
	After EdgeKind = iota
	// Finally runs the dependent once the predecessor has settled, whatever
	// its status (ok, failed, canceled or skipped), like a deferred call
	// (IOSQE_IO_HARDLINK where the kernel links them). A node that uses a
	// handle (a read, write, fsync or close of an open's handle) still runs
	// only if that open succeeded; otherwise it is canceled, its cause the
	// open's (skipped if the open was).
	Finally
	// OnFailure runs the dependent only if the predecessor failed or was
	// canceled: cleanup. When the predecessor succeeds, the dependent is
	// skipped (which is not a failure), and so is what runs only after it,
	// except a node that another predecessor cancels: a node after both
	// a skipped and a canceled node is canceled. A finally edge runs its
	// dependent whatever.
	OnFailure
)

// String returns "after", "finally" or "on_failure", the spec field names.
func (k EdgeKind) String() string {
	switch k {
	case Finally:
		return "finally"
	case OnFailure:
		return "on_failure"
	}
	return "after"
}

// Edge is one end of a dependency as seen from the other end.
type Edge struct {
	Node int32 // index of the other node
	Kind EdgeKind
}

type openFlag struct {
	name string
	bits int
}

// openFlags lists the spec's open flags, one for each flag openat2
// accepts (its O_ACCMODE of 3 and O_LARGEFILE, 0 here, aside), in the
// order Graph.Spec writes them. Access modes come first; sync before
// dsync because O_SYNC contains O_DSYNC's bit, tmpfile before directory
// because O_TMPFILE contains O_DIRECTORY's.
func openFlags() []openFlag {
	return []openFlag{
		{"rdonly", unix.O_RDONLY},
		{"wronly", unix.O_WRONLY},
		{"rdwr", unix.O_RDWR},
		{"creat", unix.O_CREAT},
		{"trunc", unix.O_TRUNC},
		{"excl", unix.O_EXCL},
		{"append", unix.O_APPEND},
		{"direct", unix.O_DIRECT},
		{"sync", unix.O_SYNC},
		{"dsync", unix.O_DSYNC},
		{"tmpfile", unix.O_TMPFILE},
		{"directory", unix.O_DIRECTORY},
		{"nofollow", unix.O_NOFOLLOW},
		{"noatime", unix.O_NOATIME},
		{"cloexec", unix.O_CLOEXEC},
		{"nonblock", unix.O_NONBLOCK},
		{"noctty", unix.O_NOCTTY},
		{"async", unix.O_ASYNC},
		{"path", unix.O_PATH},
	}
}

// namedOpenBits are the bits of the flags a spec names, the access modes
// aside (made once: Build checks every open's flags).
var namedOpenBits = func() int {
	bits := 0
	for _, f := range openFlags()[3:] {
		bits |= f.bits
	}
	return bits
}()

// unnamedOpenFlags returns the bits of flags no spec flag name gives, and
// an access mode of 3 (O_ACCMODE): what FormatOpenFlags cannot write,
// which Build refuses.
func unnamedOpenFlags(flags int) int {
	rest := flags &^ unix.O_ACCMODE &^ namedOpenBits
	if flags&unix.O_ACCMODE == unix.O_ACCMODE {
		rest |= unix.O_ACCMODE
	}
	return rest
}

// ParseOpenFlags translates spec flag names (rdonly, wronly, rdwr, creat,
// trunc, excl, append, direct, sync, dsync, tmpfile, directory, nofollow,
// noatime, cloexec, nonblock, noctty, async, path: the O_* flags of
// open(2) in lower case, without O_) into unix.O_* bits. At most one
// access mode may be given; none means rdonly.
func ParseOpenFlags(names []string) (int, error) {
	flags, modes := 0, 0
	known := openFlags()
	for _, n := range names {
		found := false
		for _, f := range known {
			if f.name == n {
				found = true
				flags |= f.bits
				if f.name == "rdonly" || f.name == "wronly" || f.name == "rdwr" {
					modes++
				}
			}
		}
		if !found {
			names := make([]string, len(known))
			for k, f := range known {
				names[k] = f.name
			}
			return 0, wrap(ErrBadValue, "unknown open flag %q%s", n, didYouMean(n, names))
		}
	}
	if modes > 1 {
		return 0, wrap(ErrBadValue, "more than one of rdonly, wronly, rdwr in %q", strings.Join(names, ","))
	}
	return flags, nil
}

// FormatOpenFlags is the inverse of ParseOpenFlags: the access mode first, then
// the other flags in a fixed order. Bits it does not know are dropped: Build
// refuses an open with any, so that the flags of a built graph's opens
// all have names.
func FormatOpenFlags(flags int) []string {
	var out []string
	switch flags & unix.O_ACCMODE {
	case unix.O_WRONLY:
		out = append(out, "wronly")
	case unix.O_RDWR:
		out = append(out, "rdwr")
	default:
		out = append(out, "rdonly")
	}
	rest := flags &^ unix.O_ACCMODE
	for _, f := range openFlags()[3:] {
		if f.bits != 0 && rest&f.bits == f.bits {
			out = append(out, f.name)
			rest &^= f.bits
		}
	}
	return out
}
