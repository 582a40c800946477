//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package livetrace

import "syscall"

// allocRing maps the queue's memory outside the Go heap. Were it a Go
// slice, the GC would count it as live heap and let as much garbage again
// pile up before collecting, doubling what a full queue costs the service.
// Pages only become resident as the queue first uses them, and unmapping at
// the end of the session gives them back.
func allocRing(n int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
