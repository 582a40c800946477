//go:build !linux

package livetrace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// privateDir is the runtime directory, used by its path: package syscall
// has openat and its kin on Linux only. A path is only as safe as the
// directories on the way to it, so openPrivateDir first checks that no
// other user can rename any of them (and so swap the runtime directory for
// a link between the check and a write).
type privateDir struct{ path string }

// openPrivateDir makes dir (its last element only) or checks that the one
// there is a directory only uid can enter.
func openPrivateDir(dir string, uid int) (*privateDir, error) {
	if err := checkAncestors(dir, uid); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if err := checkPrivate(dir, fi, uid); err != nil {
		return nil, err
	}
	return &privateDir{path: dir}, nil
}

// checkAncestors says why another user could rename dir or a directory
// above it, if one could: each, links resolved, must belong to uid or root
// and be writable by nobody else, unless it is sticky (as /tmp is).
func checkAncestors(dir string, uid int) error {
	abs, err := filepath.Abs(filepath.Dir(dir))
	if err != nil {
		return err
	}
	p, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	for {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		owner, ok := fileOwner(fi)
		if !ok {
			return fmt.Errorf("cannot tell who owns %s, above %s; %s", p, dir, privateFix)
		}
		if open := fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0; open || (owner != uid && owner != 0) {
			return fmt.Errorf("%s, above %s, can be changed by other users than uid %d (owner uid %d, mode %#o): "+
				"they could swap %s for a link; %s", p, dir, uid, owner, fi.Mode().Perm(), dir, privateFix)
		}
		up := filepath.Dir(p)
		if up == p {
			return nil
		}
		p = up
	}
}

// create makes a new file, mode 0600, named prefix and a random suffix.
func (d *privateDir) create(prefix string) (*os.File, string, error) {
	f, err := os.CreateTemp(d.path, prefix+"*.tmp")
	if err != nil {
		return nil, "", err
	}
	return f, filepath.Base(f.Name()), nil
}

func (d *privateDir) rename(from, to string) error {
	return os.Rename(d.join(from), d.join(to))
}

// unlink removes a file the helper has just made, after a failure that is
// reported already.
func (d *privateDir) unlink(name string) {
	_ = os.Remove(d.join(name))
}

func (d *privateDir) remove(name string, ours os.FileInfo, what string, logf func(string, ...any)) {
	removeOwnFile(d.join(name), ours, what, logf)
}

func (d *privateDir) close() {}

func (d *privateDir) join(name string) string { return filepath.Join(d.path, name) }
