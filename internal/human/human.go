// Package human formats the numbers iodag's command and examples print:
// durations and rates, each with three significant digits, and sizes.
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

// Bytes formats a size in binary units, exactly where it is a whole number
// of them (4 KiB, 64 MiB, 1000 B), else with three significant digits
// (1.50 KiB).
func Bytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u, v := 0, float64(n)
	for u+1 < len(units) && (n >= 1<<(10*(u+1)) || n <= -1<<(10*(u+1))) {
		u++
	}
	v /= float64(int64(1) << (10 * u))
	switch {
	case n%(1<<(10*u)) == 0:
		return fmt.Sprintf("%d %s", n>>(10*u), units[u])
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f %s", v, units[u])
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.2f %s", v, units[u])
}
