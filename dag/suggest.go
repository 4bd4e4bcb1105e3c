package dag

import (
	"reflect"
	"strings"

	"github.com/iodag/iodag/internal/suggest"
)

// didYouMean returns ` (did you mean "X"?)` for the known name X closest
// to name, or "" when none is close (see suggest.DidYouMean).
func didYouMean(name string, known []string) string {
	return suggest.DidYouMean(name, known, "%q")
}

// jsonKeys returns the JSON names of struct type t's fields, in declaration
// order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// specOps returns the names of the ops a spec may hold, in Op order.
func specOps() []string {
	var names []string
	for o := OpNop; o < numOps; o++ {
		if o != OpGo {
			names = append(names, o.String())
		}
	}
	return names
}
