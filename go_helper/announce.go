package livetrace

// A listening helper leaves a small record in a private per-user runtime
// directory, so that tools on the same machine (livetrace ps, pid:N) find
// it without being told its address. The record is only a hint: readers
// check that its process is still the one that wrote it, because a helper
// killed without Close leaves its record behind.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// announceFormat versions the record; readers skip formats they do not know.
const announceFormat = 1

// announceRecord is the record's content, field for field as readers
// expect it (docs/protocol.md, "Announce records").
type announceRecord struct {
	Format        int    `json:"format"`
	PID           int    `json:"pid"`
	Address       string `json:"address"`
	GoVersion     string `json:"go_version"`
	Helper        string `json:"helper"`
	Executable    string `json:"executable"`
	StartedUnixNs int64  `json:"started_unix_ns"`
}

// announcement is a record a server wrote, remembered so that Close removes
// that file and not one written since by someone else.
type announcement struct {
	dir  *privateDir // held open until the record is removed
	name string
	file os.FileInfo
}

// The record's name is the pid, so a process announces one server at a
// time: the first to listen. A second one serving at the same time says
// so in its warnings and goes unannounced.
var announcing struct {
	sync.Mutex
	by *Server
}

// announceDir is where records go: LIVETRACE_RUNTIME_DIR, else
// $XDG_RUNTIME_DIR/livetrace, else $TMPDIR/livetrace-<uid>.
func announceDir(uid int) string {
	if d := os.Getenv("LIVETRACE_RUNTIME_DIR"); d != "" {
		return d
	}
	// A relative XDG_RUNTIME_DIR is invalid by its specification.
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "livetrace")
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "livetrace-"+strconv.Itoa(uid))
}

// announce writes the server's record, or adds to its warnings why not: a
// service that cannot announce itself still serves.
func (s *Server) announce() {
	uid := os.Getuid()
	if s.opts.NoAnnounce || !announceSupported || uid < 0 {
		return
	}
	started := time.Now() // the listener opened a moment ago
	address, err := recordAddress(s.addr)
	if err != nil {
		s.warnNotAnnouncing(err)
		return
	}
	announcing.Lock()
	defer announcing.Unlock()
	if announcing.by != nil {
		s.warnNotAnnouncing(fmt.Errorf("this process announces its helper on %s already", announcing.by.addr))
		return
	}
	d, err := openPrivateDir(announceDir(uid), uid)
	if err != nil {
		s.warnNotAnnouncing(err)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "" // the record says what it can; the pid still finds the process
	}
	a, err := writeRecord(d, announceRecord{
		Format: announceFormat, PID: os.Getpid(), Address: address, GoVersion: runtime.Version(),
		Helper: HelperVersion, Executable: exe, StartedUnixNs: started.UnixNano(),
	})
	if err != nil {
		d.close()
		s.warnNotAnnouncing(err)
		return
	}
	s.announced = a
	announcing.by = s
}

func (s *Server) warnNotAnnouncing(err error) {
	s.warnings = append(s.warnings, fmt.Sprintf("not announcing this helper to livetrace ps (it still serves): %v", err))
}

// withdraw removes the server's record, if it wrote one.
func (s *Server) withdraw() {
	announcing.Lock()
	defer announcing.Unlock()
	if s.announced == nil {
		return
	}
	s.announced.dir.remove(s.announced.name, s.announced.file, "announce record", s.logf)
	s.announced.dir.close()
	s.announced = nil
	announcing.by = nil
}

// recordAddress is addr as a reader in any working directory can use it.
func recordAddress(addr string) (string, error) {
	a, err := parseAddress(addr)
	if err != nil || a.network != "unix" {
		return addr, err
	}
	path, err := filepath.Abs(a.path)
	if err != nil {
		return "", err
	}
	return "unix:" + path, nil
}

// privateFix is what to do about a runtime directory the helper will not use.
const privateFix = "set LIVETRACE_RUNTIME_DIR to a private directory"

// checkPrivate says why the file fi describes is not a directory only uid
// can enter, if it is not: a record tells whoever reads it where to attach,
// so nobody else may write one, or swap ours.
func checkPrivate(dir string, fi os.FileInfo, uid int) error {
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; remove it, or %s", dir, privateFix)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; remove it, or %s", dir, privateFix)
	}
	owner, ok := fileOwner(fi)
	if !ok {
		return fmt.Errorf("cannot tell who owns %s; %s", dir, privateFix)
	}
	if owner != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this process's uid %d; %s", dir, owner, uid, privateFix)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %#o, open to other users; chmod 700 it, or %s", dir, perm, privateFix)
	}
	return nil
}

// writeRecord writes <pid>.json in d under a temporary name first, so
// that a reader sees the whole record or none of it.
func writeRecord(d *privateDir, rec announceRecord) (*announcement, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	// The temporary name does not end in .json: readers never pick it up.
	f, tmp, err := d.create("." + strconv.Itoa(rec.PID) + "-") // mode 0600
	if err != nil {
		return nil, err
	}
	// No fsync: a record only matters while its process runs, and no
	// process outlives a crash of the machine.
	_, err = f.Write(append(body, '\n'))
	fi, serr := f.Stat()
	if err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := strconv.Itoa(rec.PID) + ".json"
	if err == nil {
		err = d.rename(tmp, name)
	}
	if err != nil {
		d.unlink(tmp)
		return nil, err
	}
	return &announcement{dir: d, name: name, file: fi}, nil
}
