package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// outputChunk is the most output writes to its writer at once, so that
// a write blocked on a full pipe is told from a long one under way.
const outputChunk = 64 << 10

// epoch is what output's write times count from.
var epoch = time.Now()

// output is stdout as the verbs write it. It keeps the first failed
// write's error and drops every later write, so that a verb need not
// check each one: the dispatcher (run) checks Err once, at the end. It
// also tells a signal whether a write is blocked (blockedFor).
type output struct {
	w   io.Writer
	err error
	// since is when the write in progress began (ns since epoch, at
	// least 1), or 0 between writes; the signal path reads it.
	since atomic.Int64
}

// outputError is a failed write to stdout, as output returns it: the
// dispatcher reports it, so a verb that gets one need not (writeFailed).
type outputError struct{ err error }

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// Write writes p in chunks of at most outputChunk bytes; after a failed
// write it writes nothing and returns the same error.
func (o *output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n := 0
	for len(p) > 0 {
		o.since.Store(max(int64(time.Since(epoch)), 1))
		k, err := o.w.Write(p[:min(len(p), outputChunk)])
		o.since.Store(0)
		n, p = n+k, p[k:]
		if err != nil {
			o.err = &outputError{err}
			return n, o.err
		}
	}
	return n, nil
}

// blockedFor returns how long the write in progress has been waiting, or
// 0 if none is.
func (o *output) blockedFor() time.Duration {
	s := o.since.Load()
	if s == 0 {
		return 0
	}
	return time.Since(epoch) - time.Duration(s)
}

// exitStatus returns the status iodag exits with after a verb returned
// code having written to o, and tells stderr of a failed write: a reader
// that left (EPIPE) ends iodag quietly with 141, as SIGPIPE would (128 +
// 13); any other failed write makes an exit of 0 a 1. A signal's status
// stands. prefix starts the message ("iodag run").
func (o *output) exitStatus(prefix string, code int, stderr io.Writer) int {
	switch {
	case o.err == nil || code >= 128:
		return code
	case errors.Is(o.err, syscall.EPIPE):
		return 128 + int(syscall.SIGPIPE)
	}
	fmt.Fprintf(stderr, "%s: writing the output: %v\n", prefix, o.err)
	if code == exitOK {
		return exitFailed
	}
	return code
}

// writeFailed tells stderr that writing what a verb (name) prints failed,
// unless it was stdout that failed (the dispatcher says so), and returns
// exitFailed.
func writeFailed(stderr io.Writer, name string, err error) int {
	var oe *outputError
	if !errors.As(err, &oe) {
		fmt.Fprintf(stderr, "iodag %s: %v\n", name, err)
	}
	return exitFailed
}

// trimWriter drops the spaces that end a line (a table's padding before
// an empty last column).
type trimWriter struct {
	w      io.Writer
	spaces int // held back: the line may end after them
}

func (t *trimWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexAny(rest, " \n")
		if i < 0 {
			i = len(rest)
		}
		if i > 0 {
			if err := t.flush(); err != nil {
				return 0, err
			}
			if _, err := t.w.Write(rest[:i]); err != nil {
				return 0, err
			}
			rest = rest[i:]
			continue
		}
		if rest[0] == ' ' {
			t.spaces++
		} else {
			t.spaces = 0
			if _, err := t.w.Write(rest[:1]); err != nil {
				return 0, err
			}
		}
		rest = rest[1:]
	}
	return len(p), nil
}

// flush writes the spaces held back: more than spaces follow them.
func (t *trimWriter) flush() error {
	const blanks = "                                " // 32
	for t.spaces > 0 {
		n := min(t.spaces, len(blanks))
		if _, err := io.WriteString(t.w, blanks[:n]); err != nil {
			return err
		}
		t.spaces -= n
	}
	return nil
}

// outFile is a file a verb writes after its run (--trace-json, --svg),
// opened before it, so that a path that cannot be written is refused
// before the run, not found after it.
type outFile struct {
	flag string // the flag that names it, "--svg"
	f    *os.File
	made bool // opened created it: a file never written is removed
}

// openOut opens path, the value of the verb name's flag, to be written
// later (truncated then, not now, so a run that never writes it leaves
// a file that was there as it was), or returns nil if path is "". When
// it cannot, it tells stderr why, naming the flag, and returns an error:
// exit with exitUsage.
func openOut(stderr io.Writer, name, flag, path string) (*outFile, error) {
	if path == "" {
		return nil, nil
	}
	if path == "-" {
		// A SPEC of - is stdin, so - here reads as stdout, where the
		// report goes: it would otherwise be a file named "-".
		err := errors.New("want a file name: stdout is the report's (./- names a file called -)")
		fmt.Fprintf(stderr, "iodag %s: %s -: %v\n", name, flag, err)
		return nil, err
	}
	o := &outFile{flag: flag}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	o.made = err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		fmt.Fprintf(stderr, "iodag %s: %s: %v\n", name, flag, err)
		return nil, err
	}
	o.f = f
	return o, nil
}

// write writes the file with fn and closes it; a failure is told to
// stderr, naming the flag, and returned. A nil o writes nothing.
func (o *outFile) write(stderr io.Writer, name string, fn func(io.Writer) error) error {
	if o == nil {
		return nil
	}
	f := o.f
	o.f, o.made = nil, false
	err := fn(f)
	if err == nil {
		if fi, serr := f.Stat(); serr == nil && fi.Mode().IsRegular() {
			if pos, serr := f.Seek(0, io.SeekCurrent); serr == nil {
				err = f.Truncate(pos) // what was there beyond what fn wrote
			}
		}
	}
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		err = fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "iodag %s: %s: %v\n", name, o.flag, err)
	}
	return err
}

// checkDistinct refuses outputs that would overwrite the SPEC at spec ("" for
// none), the report on stdout, or one another: each of outs (nil ones
// skipped) that is a regular file must be neither the spec nor another of
// outs, and none that is a regular file or a pipe may be stdout
// (/dev/stdout: the report and the file would overwrite or interleave with
// each other). When one is, it tells stderr which, naming the flags, and
// returns an error: exit with exitUsage (the deferred discards remove what
// openOut created).
func checkDistinct(stderr io.Writer, name, spec string, stdout io.Writer, outs ...*outFile) error {
	type file struct {
		what string
		fi   os.FileInfo
	}
	var seen []file
	if spec != "" {
		if fi, err := os.Stat(spec); err == nil && fi.Mode().IsRegular() {
			seen = append(seen, file{"the SPEC", fi})
		}
	}
	var out os.FileInfo // stdout's file, if a regular file or a pipe
	if o, ok := stdout.(*output); ok {
		if f, ok := o.w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeNamedPipe != 0) {
				out = fi
			}
		}
	}
	for _, o := range outs {
		if o == nil {
			continue
		}
		fi, err := o.f.Stat()
		if err != nil {
			continue
		}
		refuse := func(what string) error {
			err := fmt.Errorf("%s %s is %s", o.flag, o.f.Name(), what)
			fmt.Fprintf(stderr, "iodag %s: %v\n", name, err)
			return err
		}
		if out != nil && os.SameFile(out, fi) {
			return refuse("stdout: the report and the file would mix")
		}
		if !fi.Mode().IsRegular() {
			continue // /dev/null: nothing to lose
		}
		for _, s := range seen {
			if os.SameFile(s.fi, fi) {
				return refuse(s.what + ": it would be overwritten")
			}
		}
		seen = append(seen, file{o.flag + "'s file too", fi})
	}
	return nil
}

// discard closes a file not written, removing it if openOut created it.
// A nil o, or one written, is left alone.
func (o *outFile) discard() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Close()
	if o.made {
		os.Remove(o.f.Name())
	}
	o.f = nil
}

// shown returns a name of the spec's (its graph's name) as the CLI prints
// it to be read: as it is, or, if it holds anything a terminal would act
// on or hide (a control character such as ESC or CR, a bidirectional
// override such as U+202E, invalid UTF-8), quoted with those escaped.
func shown(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) || r == utf8.RuneError }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
