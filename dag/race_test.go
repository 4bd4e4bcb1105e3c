//go:build race

package dag

// raceEnabled is whether the race detector is on: tests size their work down.
const raceEnabled = true
