//go:build !race

package dag

// raceEnabled is whether the race detector is on, which allocates memory of its own.
const raceEnabled = false
