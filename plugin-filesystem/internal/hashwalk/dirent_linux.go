package hashwalk

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// dirReader lists one open directory with getdents64 into a fixed buffer,
// so a directory with millions of entries costs no more memory than a small
// one.
type dirReader struct {
	fd       int
	buf      []byte
	pos, end int
	eof      bool
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntRecLenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

var errBadDirent = errors.New("malformed directory record")

// next returns the next entry other than "." and "..". ok is false at the
// end of the directory; err reports a listing failure.
func (d *dirReader) next() (name []byte, typ uint8, ok bool, err error) {
	for {
		if d.pos >= d.end {
			if d.eof {
				return nil, 0, false, nil
			}
			n, err := unix.Getdents(d.fd, d.buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return nil, 0, false, err
			}
			if n <= 0 {
				d.eof = true
				return nil, 0, false, nil
			}
			d.pos, d.end = 0, n
		}
		rec := d.buf[d.pos:d.end]
		if len(rec) < direntNameOff {
			return nil, 0, false, errBadDirent
		}
		reclen := int(binary.NativeEndian.Uint16(rec[direntRecLenOff:]))
		if reclen < direntNameOff || reclen > len(rec) {
			return nil, 0, false, errBadDirent
		}
		d.pos += reclen
		ino := binary.NativeEndian.Uint64(rec)
		typ = rec[direntTypeOff]
		name = rec[direntNameOff:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if ino == 0 || len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		return name, typ, true, nil
	}
}
