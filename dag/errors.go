package dag

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Build and ParseSpec wrap them in a *NodeError, *FileError or
// *CycleError, and LoadSpec the file's problems in an *fs.PathError, so test
// with errors.Is.
var (
	ErrEmptyGraph      = errors.New("graph has no nodes")
	ErrTooLarge        = errors.New("graph too large")
	ErrSyntax          = errors.New("invalid JSON")
	ErrUnknownField    = errors.New("unknown field")
	ErrBadID           = errors.New("bad id")
	ErrDuplicateID     = errors.New("duplicate id")
	ErrUnknownOp       = errors.New("unknown op")
	ErrUnknownNode     = errors.New("unknown node")
	ErrForeignTask     = errors.New("task of another builder, or of another Build of it")
	ErrSelfEdge        = errors.New("self-edge")
	ErrDuplicateEdge   = errors.New("duplicate edge")
	ErrCycle           = errors.New("cycle")
	ErrMissingField    = errors.New("missing")
	ErrUnexpectedField = errors.New("not used by op")
	ErrConflict        = errors.New("conflicting fields")
	ErrUnknownFile     = errors.New("unknown file")
	ErrDuplicateFile   = errors.New("duplicate file")
	ErrUnknownHandle   = errors.New("unknown handle")
	ErrDuplicateHandle = errors.New("duplicate handle")
	ErrNotAncestor     = errors.New("not an ancestor")
	ErrHandleClosed    = errors.New("handle used after close")
	ErrBadBinding      = errors.New("bad binding")
	ErrBadLength       = errors.New("bad length")
	ErrBadValue        = errors.New("bad value")
	ErrMisaligned      = errors.New("not aligned for O_DIRECT")
	ErrBadPath         = errors.New("bad path")
	ErrNotRegular      = errors.New("not a regular file")
)

// NodeError is one problem of one node: its id, the spec field at fault (the
// JSON name, such as "after" or "len_from") and what is wrong. Line and Col give
// the position of the node's JSON object (or of the fault) when the graph came
// from ParseSpec, 0 otherwise. A NodeError with no Node is a problem of the
// spec itself (such as a JSON syntax error).
type NodeError struct {
	Node      string
	Field     string
	Err       error
	Line, Col int

	idx int32 // declaration index, -1 if none; orders errors and finds positions
}

// Error formats the problem as "LINE:COL: node "ID": field "F": what".
func (e *NodeError) Error() string {
	var sb strings.Builder
	writePos(&sb, e.Line, e.Col)
	switch {
	case len(e.Node) > 64:
		// A hostile id may be any length: quote its start.
		fmt.Fprintf(&sb, "node %q...: ", strings.ToValidUTF8(e.Node[:64], ""))
	case e.Node != "":
		fmt.Fprintf(&sb, "node %q: ", e.Node)
	case e.idx >= 0:
		fmt.Fprintf(&sb, "node #%d: ", e.idx)
	}
	if e.Field != "" {
		fmt.Fprintf(&sb, "field %q: ", e.Field)
	}
	sb.WriteString(e.Err.Error())
	return sb.String()
}

// Unwrap returns the underlying error, itself wrapping one of the sentinels.
func (e *NodeError) Unwrap() error { return e.Err }

// FileError is one problem of one entry of a spec's files.
type FileError struct {
	File      string
	Field     string
	Err       error
	Line, Col int

	idx int32
}

// Error formats the problem as "LINE:COL: file "NAME": field "F": what".
func (e *FileError) Error() string {
	var sb strings.Builder
	writePos(&sb, e.Line, e.Col)
	fmt.Fprintf(&sb, "file %q: ", e.File)
	if e.Field != "" {
		fmt.Fprintf(&sb, "field %q: ", e.Field)
	}
	sb.WriteString(e.Err.Error())
	return sb.String()
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// CycleError is a dependency cycle, listed from its first declared node back to
// that node: Path[0] == Path[len(Path)-1].
type CycleError struct {
	Path []string
}

// Error formats the cycle as "cycle: a -> b -> c -> a". A cycle of more
// than 2*cycleShown nodes shows its first and last cycleShown and how
// many it leaves out (Path has them all).
func (e *CycleError) Error() string {
	p := e.Path
	if len(p) <= 2*cycleShown {
		return "cycle: " + strings.Join(p, " -> ")
	}
	return "cycle: " + strings.Join(p[:cycleShown], " -> ") +
		" -> ... (" + strconv.Itoa(len(p)-2*cycleShown) + " more) ... -> " +
		strings.Join(p[len(p)-cycleShown:], " -> ")
}

// cycleShown is how many nodes a long cycle's message shows at each end.
const cycleShown = 8

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

func writePos(sb *strings.Builder, line, col int) {
	if line > 0 {
		sb.WriteString(strconv.Itoa(line))
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(col))
		sb.WriteString(": ")
	}
}

// detailError is a sentinel with a specific message.
type detailError struct {
	msg string
	err error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.err }

// wrap returns an error reading format that errors.Is matches with sentinel.
func wrap(sentinel error, format string, args ...any) error {
	return &detailError{msg: fmt.Sprintf(format, args...), err: sentinel}
}
