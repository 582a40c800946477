//go:build !go1.22

package livetrace

// Legacy traces have no generations to close early.
const canForceBoundaries = false

func forceBoundary() {}
