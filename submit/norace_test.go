//go:build !race

package submit

const raceEnabled = false
