package acl

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The ls samples in testdata were written from the ls source's print format, not
// captured on a Mac; the real captures are in testdata/captures (TestLsCaptures).
func readSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseLsACL(t *testing.T) {
	tests := []struct {
		file string
		want LsListing
	}{
		{"ls_file.txt", LsListing{Inode: 12970332, FileType: '-', Entries: []MacACE{
			{Principal: "group:staff", Type: "deny", Perms: []string{"delete"}},
			{Principal: "user:_www", Type: "allow", Perms: []string{"read", "write"}},
		}}},
		{"ls_dir.txt", LsListing{Inode: 421853, FileType: 'd', Entries: []MacACE{
			{Principal: "group:everyone", Type: "deny", Perms: []string{"delete"}},
			{Principal: "user:jsmith", Type: "allow", Perms: []string{"list", "add_file", "search", "delete",
				"add_subdirectory", "delete_child", "readattr", "writeattr", "readextattr", "writeextattr", "readsecurity"},
				Flags: []string{"file_inherit", "directory_inherit"}},
			{Principal: "group:com.apple.sharepoint.group.1", Type: "allow",
				Perms: []string{"list", "search", "readattr", "readextattr", "readsecurity"},
				Flags: []string{"inherited", "file_inherit", "directory_inherit", "limit_inherit"}},
		}}},
		{"ls_uuid.txt", LsListing{Inode: 9120551, FileType: '-', Entries: []MacACE{
			{Principal: "user:#1001", Type: "allow", Perms: []string{"read"}},
			{Principal: "group:#80", Type: "deny", Perms: []string{"write", "append"}},
			{Principal: "3C1A5E2B-77D0-4F4A-9C1E-2B5D7E8F9A10", Type: "allow", Perms: []string{"readattr"}},
			{Principal: "group:Domain Users", Type: "allow", Perms: []string{"read", "readattr"}},
			{Principal: "user:svc_backup", Type: "allow"},
		}}},
		{"ls_none.txt", LsListing{Inode: 1880042, FileType: '-'}},
	}
	for _, tc := range tests {
		got, err := ParseLsACL(readSample(t, tc.file))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.file, got, err, tc.want)
		}
	}
}

func TestParseLsACLRejects(t *testing.T) {
	head := "12 -rw-r--r--+ 1 a  b  0 Oct  4 10:12 /tmp/f\n"
	tests := map[string]string{
		"empty":           "",
		"only a newline":  "\n",
		"no inode":        "-rw-r--r--+ 1 a b 0 Oct 4 10:12 /tmp/f\n",
		"bad mode":        "12 xrw-r--r-- 1 a b 0 Oct 4 10:12 /tmp/f\n",
		"short mode":      "12 -rw 1\n",
		"index goes back": head + " 1: user:a allow read\n 0: user:b allow read\n",
		"index repeats":   head + " 0: user:a allow read\n 0: user:b allow read\n",
		"no index":        head + " user:a allow read\n",
		"negative index":  head + " -1: user:a allow read\n",
		"stray line":      head + "total 0\n",
		"blank line":      head + "\n 0: user:a allow read\n",
	}
	for name, out := range tests {
		got, err := ParseLsACL(out)
		if !errors.Is(err, ErrBadListing) || got.Entries != nil || got.Inode != 0 {
			t.Errorf("%s: got %+v, %v; want a rejection", name, got, err)
		}
	}
}

// TestParseLsACLUnknownEntries: an entry whose content is not understood is kept as
// an unknown entry saying what was not understood, and the entries around it are read.
func TestParseLsACLUnknownEntries(t *testing.T) {
	head := "12 -rw-r--r--+ 1 a  b  0 Oct  4 10:12 /tmp/f\n"
	tests := map[string]struct {
		entry string
		want  MacACE
	}{
		"unknown entry type": {" 0: user:root unknown read",
			MacACE{Type: "unknown", Text: "user:root unknown read", Problem: "entry type is not allow or deny"}},
		"audit type spelled out": {" 0: user:root audit read",
			MacACE{Type: "unknown", Text: "user:root audit read", Problem: "entry type is not allow or deny"}},
		"uppercase name": {" 0: user:a allow read,WRITE",
			MacACE{Principal: "user:a", Type: "unknown", Text: "allow read,WRITE", Problem: `permission name "WRITE"`}},
		"name ls does not print": {" 0: group:staff deny read,purge",
			MacACE{Principal: "group:staff", Type: "unknown", Text: "deny read,purge", Problem: `permission name "purge"`}},
		"empty name in list": {" 0: user:a allow read,,write",
			MacACE{Principal: "user:a", Type: "unknown", Text: "allow read,,write", Problem: `permission name ""`}},
		"no principal": {" 0: allow read",
			MacACE{Type: "unknown", Text: "allow read", Problem: "entry type is not allow or deny"}},
		"only inherited": {" 0:  inherited allow read",
			MacACE{Type: "unknown", Text: " inherited allow read", Problem: "no principal"}},
	}
	for name, tt := range tests {
		out := head + " 0: group:admin allow read\n" + strings.Replace(tt.entry, " 0:", " 1:", 1) + "\n 2: user:b deny write\n"
		got, err := ParseLsACL(out)
		want := []MacACE{{Principal: "group:admin", Type: "allow", Perms: []string{"read"}}, tt.want,
			{Principal: "user:b", Type: "deny", Perms: []string{"write"}}}
		if err != nil || !reflect.DeepEqual(got.Entries, want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", name, got.Entries, err, want)
		}
	}
}

// TestLsCaptures reads the entry lines of real ls -le output (testdata/captures,
// sources in SOURCES.md there).
func TestLsCaptures(t *testing.T) {
	tests := map[string][]MacACE{
		"eza292_music.txt": {{Principal: "group:everyone", Type: "deny", Perms: []string{"delete"}}},
		"openzfsonosx86_m4v.txt": {
			{Principal: "group:owner", Type: "allow", Perms: []string{"read", "write", "append", "readattr", "writeattr",
				"readextattr", "writeextattr", "readsecurity", "writesecurity", "chown"}},
			{Principal: "group:group", Type: "allow", Perms: []string{"read", "readattr", "readextattr", "readsecurity"}},
			{Principal: "group:everyone", Type: "unknown", Text: "allow read,readattr,readextattr,read security",
				Problem: `permission name "read security"`},
		},
	}
	for name, want := range tests {
		b := readSample(t, "captures/"+name)
		lines := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
		got, err := parseLsEntries(lines[1:])
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", name, got, err, want)
		}
	}
	// The rows name the entry that was not understood, in its place.
	b := readSample(t, "captures/openzfsonosx86_m4v.txt")
	entries, err := parseLsEntries(strings.Split(strings.TrimSuffix(b, "\n"), "\n")[1:])
	if err != nil {
		t.Fatal(err)
	}
	rows := MacRows(MacInfo{Owner: "ladmin", Group: "staff", Mode: 0o100644, Entries: entries})
	if got, want := rows[len(rows)-1], newRow("ace", "unknown", "group:everyone",
		"allow read,readattr,readextattr,read security", "-"); !reflect.DeepEqual(got, want) {
		t.Errorf("last row %v, want %v", got, want)
	}
	if got := rows[4]; !reflect.DeepEqual(got, newRow("acl", "extended", "-")) {
		t.Errorf("acl row %v", got)
	}
}

func TestMacRows(t *testing.T) {
	l, err := ParseLsACL(readSample(t, "ls_file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := MacRows(MacInfo{Owner: "jsmith", Group: "wheel", Mode: 0o100644, Entries: l.Entries})
	// The upstream macOS sample, except that ls does not print the file_inherit flag
	// upstream showed on this plain file.
	want := []Row{
		newRow("owner", "jsmith"), newRow("group", "wheel"), newRow("permissions", "rw-r--r--"), newRow("mode", "0644"),
		newRow("acl", "extended", "-"),
		newRow("ace", "deny", "group:staff", "delete", "-"),
		newRow("ace", "allow", "user:_www", "read,write", "-"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}
	l, err = ParseLsACL(readSample(t, "ls_uuid.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got = MacRows(MacInfo{Owner: "root", Group: "wheel", Mode: 0o100640, Entries: l.Entries})
	if !reflect.DeepEqual(got[len(got)-1], newRow("ace", "allow", "user:svc_backup", "-", "-")) {
		t.Errorf("entry without permissions: %v", got[len(got)-1])
	}
	l, err = ParseLsACL(readSample(t, "ls_none.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got = MacRows(MacInfo{Owner: "root", Group: "wheel", Mode: 0o100644, Entries: l.Entries})
	if len(got) != 5 || !reflect.DeepEqual(got[4], newRow("acl", "none", "-")) {
		t.Errorf("no ACL: %v", got)
	}
}

func FuzzParseLsACL(f *testing.F) {
	for _, name := range []string{"ls_file.txt", "ls_dir.txt", "ls_uuid.txt", "ls_none.txt",
		"captures/eza292_music.txt", "captures/openzfsonosx86_m4v.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		l, err := ParseLsACL(out)
		if err != nil {
			if l.Entries != nil || l.Inode != 0 || l.FileType != 0 {
				t.Fatalf("rejected output returned %+v", l)
			}
			return
		}
		for _, e := range l.Entries {
			switch e.Type {
			case "allow", "deny":
				if e.Principal == "" || e.Text != "" || e.Problem != "" {
					t.Fatalf("accepted a malformed entry %+v", e)
				}
				for _, n := range e.Perms {
					if !macPermNames[n] {
						t.Fatalf("unknown permission %q in %+v", n, e)
					}
				}
				for _, n := range e.Flags {
					if n != "inherited" && !macEntryFlags[n] {
						t.Fatalf("unknown flag %q in %+v", n, e)
					}
				}
			case "unknown":
				if e.Problem == "" || e.Perms != nil {
					t.Fatalf("unknown entry without a reason, or with permissions: %+v", e)
				}
			default:
				t.Fatalf("entry type %q", e.Type)
			}
		}
		MacRows(MacInfo{Entries: l.Entries})
	})
}
