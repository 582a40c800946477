//go:build linux

package livetrace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// privateDir is the runtime directory, opened once without following a
// symbolic link in its place and checked through that handle; the record is
// created, renamed and removed relative to it. Whoever can rename the
// directory (the owner of the one above it, as when root starts a service
// with a user's XDG_RUNTIME_DIR) can then move it or put a link in its
// place, but the helper writes into the directory it checked, or nowhere.
type privateDir struct {
	path string
	f    *os.File
}

// openPrivateDir makes dir (its last element only) or opens the one there,
// and checks that it is a directory only uid can enter.
func openPrivateDir(dir string, uid int) (*privateDir, error) {
	// Links above the last element are followed: those are the system's or
	// the user's choice, as with any path.
	parent := filepath.Dir(dir)
	pfd, err := openat(atFDCWD, parent, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer syscall.Close(pfd) // read-only: nothing to flush
	name := filepath.Base(dir)
	if err := ignoringEINTR(func() error { return syscall.Mkdirat(pfd, name, 0o700) }); err != nil && err != syscall.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	fd, err := openat(pfd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err == syscall.ELOOP || err == syscall.ENOTDIR {
		// Refused either way (Linux says ENOTDIR for a link, too); a second
		// look only words the message.
		fi, lerr := os.Lstat(dir)
		switch {
		case lerr == nil && fi.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symbolic link; remove it, or %s", dir, privateFix)
		case lerr == nil && fi.IsDir():
			return nil, fmt.Errorf("%s was replaced while it was being opened (is another user renaming it?); %s", dir, privateFix)
		}
		return nil, fmt.Errorf("%s is not a directory; remove it, or %s", dir, privateFix)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := &privateDir{path: dir, f: os.NewFile(uintptr(fd), dir)}
	fi, err := d.f.Stat()
	if err == nil {
		err = checkPrivate(dir, fi, uid)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// create makes a new file, mode 0600, named prefix and a random suffix.
func (d *privateDir) create(prefix string) (*os.File, string, error) {
	for try := 0; ; try++ {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, "", err
		}
		name := prefix + hex.EncodeToString(r[:]) + ".tmp"
		fd, err := openat(d.fd(), name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			return os.NewFile(uintptr(fd), d.join(name)), name, nil
		}
		if err != syscall.EEXIST || try == 100 {
			return nil, "", &os.PathError{Op: "create", Path: d.join(name), Err: err}
		}
	}
}

func (d *privateDir) rename(from, to string) error {
	if err := ignoringEINTR(func() error { return syscall.Renameat(d.fd(), from, d.fd(), to) }); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(from), New: d.join(to), Err: err}
	}
	return nil
}

// unlink removes a file the helper has just made, after a failure that is
// reported already.
func (d *privateDir) unlink(name string) {
	_ = ignoringEINTR(func() error { return syscall.Unlinkat(d.fd(), name) })
}

// remove deletes name only if it is still the file ours describes (same
// device and inode): another process may have replaced it since.
func (d *privateDir) remove(name string, ours os.FileInfo, what string, logf func(string, ...any)) {
	path := d.join(name)
	fd, err := openat(d.fd(), name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err == syscall.ENOENT {
		return
	}
	var now os.FileInfo
	if err == nil {
		f := os.NewFile(uintptr(fd), path)
		now, err = f.Stat()
		_ = f.Close() // read-only: nothing to flush
	}
	if err != nil && err != syscall.ELOOP {
		logf("not removing %s: %v", path, err)
		return
	}
	if now == nil || !os.SameFile(ours, now) {
		logf("not removing %s: it is no longer this process's %s", path, what)
		return
	}
	if err := ignoringEINTR(func() error { return syscall.Unlinkat(d.fd(), name) }); err != nil && err != syscall.ENOENT {
		logf("could not remove %s: %v", path, &os.PathError{Op: "remove", Path: path, Err: err})
	}
}

func (d *privateDir) close() {
	_ = d.f.Close() // a directory opened read-only: nothing to flush
}

func (d *privateDir) fd() int { return int(d.f.Fd()) }

func (d *privateDir) join(name string) string { return filepath.Join(d.path, name) }

// atFDCWD makes openat resolve a relative path from the working directory.
const atFDCWD = -100

// openat opens path relative to the directory dirfd, close-on-exec.
func openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = syscall.Openat(dirfd, path, flags|syscall.O_CLOEXEC, mode)
		return err
	})
	return fd, err
}

// ignoringEINTR retries a call interrupted by a signal, as package os does.
func ignoringEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
