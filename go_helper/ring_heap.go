//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package livetrace

// allocRing falls back to the Go heap where anonymous mappings are not
// available through package syscall.
func allocRing(n int) ([]byte, func() error, error) {
	return make([]byte, n), func() error { return nil }, nil
}
