package mounts

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMountinfoHost(t *testing.T) {
	ms, err := ParseMountinfo(readTestdata(t, "mountinfo_host.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 26 {
		t.Fatalf("got %d mounts, want 26", len(ms))
	}
	byPoint := map[string]Mount{}
	for _, m := range ms {
		byPoint[m.Point] = m
	}
	tests := []struct {
		point string
		want  Mount
	}{
		{"/", Mount{ID: 26, ParentID: 1, Major: 259, Minor: 2, Root: "/", Point: "/",
			Options: "rw,relatime", Optional: []string{"shared:1"}, FSType: "ext4",
			Source: "/dev/nvme0n1p2", SuperOptions: "rw,errors=remount-ro"}},
		{"/mnt/my share", Mount{ID: 48, ParentID: 26, Major: 0, Minor: 42, Root: "/",
			Point: "/mnt/my share", Options: "rw,relatime", Optional: []string{"shared:35"},
			FSType: "cifs", Source: "//nas/My Share"}},
		{"/opt/tab\tdir", Mount{ID: 54, ParentID: 26, Major: 259, Minor: 2,
			Root: `/var/lib/back\slash`, Point: "/opt/tab\tdir", Options: "rw,relatime",
			Optional: []string{"shared:1"}, FSType: "ext4", Source: "/dev/nvme0n1p2", SuperOptions: "rw"}},
		{"/mnt/ceph", Mount{ID: 55, ParentID: 26, Major: 0, Minor: 47, Root: "/", Point: "/mnt/ceph",
			Options: "rw,relatime", Optional: []string{"master:12", "propagate_from:3", "unbindable"},
			FSType: "ceph", Source: "10.0.0.7:6789:/", SuperOptions: "rw,name=admin"}},
		{"/mnt/gluster", Mount{ID: 56, ParentID: 26, Major: 0, Minor: 48, Root: "/", Point: "/mnt/gluster",
			Options: "rw,relatime", FSType: "fuse.glusterfs", Source: "gl1:/vol0",
			SuperOptions: "rw,user_id=0,group_id=0,default_permissions,allow_other,max_read=131072"}},
	}
	for _, tt := range tests {
		got, ok := byPoint[tt.point]
		if !ok {
			t.Errorf("no mount at %q", tt.point)
			continue
		}
		if tt.want.SuperOptions == "" {
			tt.want.SuperOptions = got.SuperOptions // long option strings are not the point here
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("mount at %q:\n got %#v\nwant %#v", tt.point, got, tt.want)
		}
	}
}

func TestParseMountinfoErrors(t *testing.T) {
	tests := []struct {
		file, wantSub string
	}{
		{"mountinfo_bad_noseparator.txt", "separator"},
		{"mountinfo_bad_id.txt", "line 2: mount id"},
		{"mountinfo_bad_device.txt", "major:minor"},
		{"mountinfo_bad_short.txt", "too few fields"},
		{"mountinfo_bad_trailing.txt", "at most 3"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ms, err := ParseMountinfo(readTestdata(t, tt.file))
			if err == nil {
				t.Fatalf("no error; got %d mounts", len(ms))
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("error %q does not mention %q", err, tt.wantSub)
			}
		})
	}
}

func TestParseMountinfoInline(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Mount
		wantErr bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "blank lines", in: "\n\n  \n", want: nil},
		{name: "no trailing newline, no super options",
			in: "1 0 8:1 / / rw - ext4 /dev/sda1",
			want: []Mount{{ID: 1, Major: 8, Minor: 1, Root: "/", Point: "/", Options: "rw",
				FSType: "ext4", Source: "/dev/sda1"}}},
		{name: "newline escape in point",
			in: "2 1 0:40 / /mnt/a\\012b rw - nfs srv:/x rw\n",
			want: []Mount{{ID: 2, ParentID: 1, Minor: 40, Root: "/", Point: "/mnt/a\nb",
				Options: "rw", FSType: "nfs", Source: "srv:/x", SuperOptions: "rw"}}},
		{name: "bad escapes kept literally",
			in: "2 1 0:40 / /mnt/a\\09x\\777\\1 rw - nfs srv rw\n",
			want: []Mount{{ID: 2, ParentID: 1, Minor: 40, Root: "/", Point: `/mnt/a\09x\777\1`,
				Options: "rw", FSType: "nfs", Source: "srv", SuperOptions: "rw"}}},
		{name: "dash as mount source is not the separator",
			in: "3 1 0:41 / /x rw shared:2 - tmpfs - rw\n",
			want: []Mount{{ID: 3, ParentID: 1, Minor: 41, Root: "/", Point: "/x", Options: "rw",
				Optional: []string{"shared:2"}, FSType: "tmpfs", Source: "-", SuperOptions: "rw"}}},
		{name: "negative id", in: "-1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", wantErr: true},
		{name: "double space", in: "1 0 8:1 / / rw  - ext4 /dev/sda1 rw\n", wantErr: true},
		{name: "empty type", in: "1 0 8:1 / / rw -  /dev/sda1 rw\n", wantErr: true},
		{name: "huge minor", in: "1 0 8:99999999999 / / rw - ext4 /dev/sda1 rw\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMountinfo([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, got %#v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// escapeOctal is the kernel's escaping of a mountinfo field, written for the
// round-trip property of the fuzz target.
func escapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func formatMountinfo(m Mount) string {
	f := []string{fmt.Sprint(m.ID), fmt.Sprint(m.ParentID), fmt.Sprintf("%d:%d", m.Major, m.Minor),
		escapeOctal(m.Root), escapeOctal(m.Point), escapeOctal(m.Options)}
	for _, o := range m.Optional {
		f = append(f, escapeOctal(o))
	}
	f = append(f, "-", escapeOctal(m.FSType), escapeOctal(m.Source))
	if m.SuperOptions != "" {
		f = append(f, escapeOctal(m.SuperOptions))
	}
	return strings.Join(f, " ")
}

func FuzzParseMountinfo(f *testing.F) {
	for _, name := range []string{"mountinfo_host.txt", "mountinfo_container.txt", "mountinfo_bad_id.txt"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte("1 0 8:1 / /a\\040b rw a:1 b:2 - ext4 /dev/x rw"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMountinfo(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.FSType == "" || m.Root == "" || m.Point == "" {
				t.Fatalf("accepted a mount with an empty required field: %#v", m)
			}
			// Whatever was accepted must survive the kernel's own escaping:
			// the decoded fields carry no information lost in parsing.
			line := formatMountinfo(m)
			again, err := ParseMountinfo([]byte(line))
			if err != nil {
				t.Fatalf("re-parse of %q: %v", line, err)
			}
			if len(again) != 1 || !reflect.DeepEqual(again[0], m) {
				t.Fatalf("round trip of %#v gave %#v", m, again)
			}
		}
	})
}
