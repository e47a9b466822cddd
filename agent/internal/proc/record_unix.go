//go:build !windows

package proc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// A verification record lets a start that finds the binary unchanged skip its hash.
// It says that the file with this identity (device, inode, size, modification and
// change times) at this path had this SHA-256 when the agent hashed it, and lives in
// the data dir (ImageCache.RecordDir, one file per plugin), written by the agent
// alone. Why it may stand for the hash: the binary is checked at every start to be
// owned by root (or the agent's user) and writable by nobody else, so only they can
// change its bytes; any change of its bytes moves its change time (which no one can set
// back), any rename over it gives another inode. Three things would let bytes change
// under an unchanged identity, and each keeps the record from being written or used:
// a write in the same clock tick as the change time the record keeps (a record is
// only written for a file changed at least recordMargin before its hash began); a
// shared writable mapping, whose later writes to a page already dirty move no time
// (no record is written or used while anyone has the file open for writing:
// noWriters); and a change during the hash or the copy (the identity is read again
// afterwards and must be the same). What runs is still the sealed copy of the bytes
// the start read, never the file.

// recordFormat is the version of the record's layout.
const recordFormat = 1

// maxRecordBytes bounds a record: a path and a few numbers.
const maxRecordBytes = 4096

// recordMargin is how long before the hash began the file must last have changed for
// its verification to be recorded: longer than any file system's timestamp
// granularity (ext3's second, FAT's two), so that a later write cannot keep the
// change time the record holds. A variable for the tests.
var recordMargin = 2 * time.Second

// record is the file's content, JSON.
type record struct {
	Format    int    `json:"format"`
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	Dev       uint64 `json:"dev"`
	Ino       uint64 `json:"ino"`
	Size      uint64 `json:"size"`
	MtimeSec  int64  `json:"mtime_sec"`
	MtimeNsec int64  `json:"mtime_nsec"`
	CtimeSec  int64  `json:"ctime_sec"`
	CtimeNsec int64  `json:"ctime_nsec"`
}

func recordOf(b binary, id fileID) record {
	return record{Format: recordFormat, Path: b.Path, SHA256: hex.EncodeToString(b.Checksum),
		Dev: id.dev, Ino: id.ino, Size: id.size,
		MtimeSec: id.mtimeSec, MtimeNsec: id.mtimeNsec, CtimeSec: id.ctimeSec, CtimeNsec: id.ctimeNsec}
}

// trustedRecordDir reports whether dir is a directory (not a link) of root or the
// agent's user that nobody else may enter.
func trustedRecordDir(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir() && safefile.Owned(fi) == nil && fi.Mode().Perm()&0o077 == 0
}

// vouched reports whether the record in dir for b says that the file with identity id
// at b.Path has the catalog's checksum. A record that is missing, unreadable, not a
// regular file (a link is not followed), not owned by root or the agent's user,
// readable or writable by anyone else, linked more than once, too long, not exactly
// the layout, or about another file or checksum vouches for nothing.
func vouched(dir string, b binary, id fileID) bool {
	if dir == "" || !trustedRecordDir(dir) {
		return false
	}
	f, fi, err := safefile.Open(filepath.Join(dir, b.Name))
	if err != nil {
		return false
	}
	defer f.Close()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink != 1 || safefile.Owned(fi) != nil || fi.Mode().Perm()&0o077 != 0 || fi.Size() > maxRecordBytes {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil || len(data) > maxRecordBytes {
		return false
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || dec.More() {
		return false
	}
	return r == recordOf(b, id)
}

// writeRecord records that the file with identity id at b.Path has b's checksum,
// whole or not at all (atomicfile: a new file opened O_EXCL|O_NOFOLLOW, fsynced,
// renamed over the old one, the directory fsynced). The directory is made (0700) in
// the data dir, which must exist: a start never makes the data dir.
func writeRecord(dir string, b binary, id fileID) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if !trustedRecordDir(dir) {
		return errors.New(dir + " is not a directory only the agent's user may enter")
	}
	data, err := json.Marshal(recordOf(b, id))
	if err != nil {
		return err
	}
	err = atomicfile.WriteMode(filepath.Join(dir, b.Name), append(data, '\n'), 0o600)
	var syncErr *atomicfile.DirSyncError
	if errors.As(err, &syncErr) {
		return nil // the record is whole; at worst a crash loses it, and a start hashes
	}
	return err
}

// changedLongBefore reports whether id's change time is more than recordMargin
// before t.
func (id fileID) changedLongBefore(t time.Time) bool {
	return time.Unix(id.ctimeSec, id.ctimeNsec).Before(t.Add(-recordMargin))
}
