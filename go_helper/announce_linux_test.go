package livetrace

import (
	"os"
	"path/filepath"
	"testing"
)

// Once open, the runtime directory is the one written to, whatever is put
// at its path: another user who renames it and leaves a link in its place
// gets nothing written where the link points.
func TestAnnounceWritesIntoTheDirectoryItChecked(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "rt")
	d, err := openPrivateDir(dir, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	moved, target := filepath.Join(base, "moved"), filepath.Join(base, "target")
	mkdir(t, target)
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	a, err := writeRecord(d, announceRecord{Format: announceFormat, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, target); len(names) != 0 {
		t.Errorf("written through the link: %v", names)
	}
	if rec := readRecord(t, moved); rec.PID != os.Getpid() {
		t.Errorf("the record in the directory checked: %+v", rec)
	}
	book := &logBook{}
	d.remove(a.name, a.file, "announce record", book.logf)
	d.close()
	if names := dirNames(t, moved); len(names) != 0 || book.String() != "" {
		t.Errorf("after remove: %v; log %q", names, book.String())
	}
}
