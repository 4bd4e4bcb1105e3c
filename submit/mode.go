package submit

import "fmt"

// Mode is a submission strategy.
type Mode int

const (
	// Graph is native dataflow (the default).
	Graph Mode = iota
	// Link serializes each component into one IOSQE_IO_LINK chain.
	Link
	// Waves submits level by level, waiting for each level.
	Waves
)

// Modes returns every mode, in the order reports show them: link, waves,
// graph.
func Modes() [3]Mode { return [3]Mode{Link, Waves, Graph} }

// String returns the mode's name: "graph", "link" or "waves".
func (m Mode) String() string {
	if m >= Graph && m <= Waves {
		return [...]string{"graph", "link", "waves"}[m]
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mode's name.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	*m = v
	return err
}

// ParseMode returns the mode named s ("graph", "link" or "waves").
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want graph, link or waves)", s)
}
