//go:build !race

package wire

// raceEnabled says the race detector is on.
const raceEnabled = false
