package mounts

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParseMountinfo parses the text of Linux /proc/<pid>/mountinfo. Each line
// reads
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// mount id, parent id, major:minor, root, mount point, mount options, zero or
// more optional fields ended by a lone "-", then the filesystem type, the
// source and the per-superblock options. The kernel writes a space, tab,
// newline or backslash inside a field as a backslash and three octal digits
// (\040); those escapes are decoded. Empty lines are ignored. Any malformed
// line fails the whole parse: a guard that silently dropped a line could miss
// the very network mount it exists to find.
func ParseMountinfo(data []byte) ([]Mount, error) {
	var ms []Mount
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := parseMountinfoLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", lineNo, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func parseMountinfoLine(line string) (Mount, error) {
	f := strings.Split(line, " ")
	// Six leading fields, the "-" separator, then type and source at least.
	if len(f) < 9 {
		return Mount{}, fmt.Errorf("too few fields (%d)", len(f))
	}
	var m Mount
	var err error
	if m.ID, err = parseID(f[0]); err != nil {
		return Mount{}, fmt.Errorf("mount id: %w", err)
	}
	if m.ParentID, err = parseID(f[1]); err != nil {
		return Mount{}, fmt.Errorf("parent id: %w", err)
	}
	maj, min, ok := strings.Cut(f[2], ":")
	if !ok {
		return Mount{}, fmt.Errorf("device %q is not major:minor", f[2])
	}
	if m.Major, err = parseDev(maj); err != nil {
		return Mount{}, fmt.Errorf("device major: %w", err)
	}
	if m.Minor, err = parseDev(min); err != nil {
		return Mount{}, fmt.Errorf("device minor: %w", err)
	}
	m.Root = unescapeOctal(f[3])
	m.Point = unescapeOctal(f[4])
	if m.Root == "" || m.Point == "" {
		return Mount{}, fmt.Errorf("empty root or mount point")
	}
	m.Options = unescapeOctal(f[5])
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 {
		return Mount{}, fmt.Errorf("no \"-\" separator after the optional fields")
	}
	for _, o := range f[6:sep] {
		if o == "" {
			return Mount{}, fmt.Errorf("empty optional field")
		}
		m.Optional = append(m.Optional, unescapeOctal(o))
	}
	rest := f[sep+1:]
	if len(rest) < 2 {
		return Mount{}, fmt.Errorf("missing filesystem type or source after \"-\"")
	}
	if len(rest) > 3 {
		return Mount{}, fmt.Errorf("%d fields after \"-\", want at most 3", len(rest))
	}
	m.FSType = unescapeOctal(rest[0])
	if m.FSType == "" {
		return Mount{}, fmt.Errorf("empty filesystem type")
	}
	m.Source = unescapeOctal(rest[1])
	if len(rest) == 3 {
		m.SuperOptions = unescapeOctal(rest[2])
	}
	return m, nil
}

func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return int(n), nil
}

func parseDev(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return uint32(n), nil
}

// unescapeOctal decodes the kernel's \ooo escapes. A backslash not followed
// by three octal digits naming a byte is kept as it is, so odd input never
// loses characters.
func unescapeOctal(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := int(s[i+1]-'0')<<6 | int(s[i+2]-'0')<<3 | int(s[i+3]-'0')
			if v <= 0xff {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
