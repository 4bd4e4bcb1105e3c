// Package human formats the numbers iodag's command and examples print:
// durations and rates, each with three significant digits.
package human

import (
	"fmt"
	"time"
)

// Duration formats ns nanoseconds with three significant digits, in
// time.Duration's notation: 999ns, 1.23µs, 12.3ms, 1.38s.
func Duration(ns int64) string {
	d := time.Duration(ns)
	for r := time.Duration(1); r < time.Hour; r *= 10 {
		if d < 1000*r {
			return d.Round(r).String()
		}
	}
	return d.Round(time.Second).String()
}

// Rate formats a rate (or any count) with three significant digits and a k
// or M suffix: 999, 1.23k, 18.1k, 101k, 2.40M.
func Rate(v float64) string {
	switch {
	case v >= 100e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 10e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 100e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
