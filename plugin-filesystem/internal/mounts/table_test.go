package mounts

import "testing"

func TestTableClassifyHost(t *testing.T) {
	ms, err := ParseMountinfo(readTestdata(t, "mountinfo_host.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(ms)
	tests := []struct {
		path string
		want Class
	}{
		{"/", Local},
		{"/etc/hosts", Local},
		{"/proc", Pseudo},
		{"/proc/1/fd", Pseudo},
		{"/proc/sys/fs/binfmt_misc", Pseudo},
		{"/sys/kernel/debug/tracing", Pseudo},
		{"/dev", Pseudo},
		{"/dev/shm/x", Local}, // tmpfs on top of devtmpfs
		{"/run/user", Local},
		{"/mnt/nfs", Network},
		{"/mnt/nfs/", Network},
		{"/mnt/nfs/a/b", Network},
		{"/mnt/nfs/scratch", Local}, // tmpfs mounted inside the NFS tree
		{"/mnt/nfs/scratch/f", Local},
		{"/mnt/nfsx", Local}, // sibling that shares the prefix: a bind mount of ext4
		{"/mnt/nfsx/data", Local},
		{"/mnt/nf", Local},
		{"/mnt", Local},
		{"/mnt/my share/doc", Network},
		{"/mnt/my", Local},
		{"/home/alice/remote/src", Network},
		{"/home/alice/remotes", Local},
		{"/net", Pseudo},
		{"/net/tape/x", Network},
		{"/misc/y", Local}, // autofs with a real filesystem mounted on top
		{"/opt/tab\tdir/z", Local},
		{"/mnt/ceph", Network},
		{"/mnt/gluster/v", Network},
		{"/srv/9p/f", Network},
		{"/mnt/nfs/../nfsx", Local}, // cleaned lexically before the lookup
		{"relative/path", Local},
		{"", Local},
	}
	for _, tt := range tests {
		if got := tab.Classify(tt.path); got != tt.want {
			t.Errorf("Classify(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestTableAt(t *testing.T) {
	ms, err := ParseMountinfo(readTestdata(t, "mountinfo_container.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(ms)
	tests := []struct {
		path   string
		want   Class
		wantOK bool
	}{
		{"/", Local, true},
		{"/data", Network, true},
		{"/data/x", Local, false},
		{"/proc", Pseudo, true},
		{"/proc/kcore", Local, true}, // a tmpfs file masking the proc file
		{"/proc/acpi", Local, true},
		{"/etc/resolv.conf", Local, true},
		{"/etc", Local, false},
		{"/sys/fs/cgroup", Pseudo, true},
	}
	for _, tt := range tests {
		got, ok := tab.At(tt.path)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("At(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.wantOK)
		}
	}
	if got := tab.Classify("/proc/self/status"); got != Pseudo {
		t.Errorf("Classify(/proc/self/status) = %v, want pseudo", got)
	}
	if got := tab.Classify("/proc/sys/kernel"); got != Pseudo {
		t.Errorf("Classify(/proc/sys/kernel) = %v, want pseudo", got)
	}
	if got := tab.Classify("/data/home/a"); got != Network {
		t.Errorf("Classify(/data/home/a) = %v, want network", got)
	}
}

func TestTableLaterMountWins(t *testing.T) {
	tab := NewTable([]Mount{
		{Point: "/a", FSType: "nfs"},
		{Point: "/a/", FSType: "ext4"},
		{Point: "/b", FSType: "ext4"},
		{Point: "/b", FSType: "cifs"},
		{Point: "not-absolute", FSType: "nfs"},
	})
	if got := tab.Classify("/a/x"); got != Local {
		t.Errorf("/a/x = %v, want local (ext4 stacked over nfs)", got)
	}
	if got := tab.Classify("/b/x"); got != Network {
		t.Errorf("/b/x = %v, want network (cifs stacked over ext4)", got)
	}
	if tab.Len() != 2 {
		t.Errorf("Len = %d, want 2", tab.Len())
	}
}

func TestNilAndEmptyTable(t *testing.T) {
	var nilTab *Table
	if nilTab.Classify("/proc") != Local || nilTab.Len() != 0 {
		t.Error("nil table must answer local")
	}
	if _, ok := nilTab.At("/proc"); ok {
		t.Error("nil table has no mount points")
	}
	empty := NewTable(nil)
	if empty.Classify("/mnt/nfs") != Local {
		t.Error("empty table must answer local")
	}
}

func TestMountClassRemoteFlag(t *testing.T) {
	tests := []struct {
		m    Mount
		want Class
	}{
		{Mount{FSType: "apfs"}, Local},
		{Mount{FSType: "apfs", Remote: true}, Network},
		{Mount{FSType: "autofs", Remote: true}, Pseudo},
		{Mount{FSType: "devfs"}, Pseudo},
		{Mount{FSType: "smbfs", Remote: true}, Network},
		{Mount{FSType: "NFS"}, Network},
	}
	for _, tt := range tests {
		if got := tt.m.Class(); got != tt.want {
			t.Errorf("%#v.Class() = %v, want %v", tt.m, got, tt.want)
		}
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{Local: "local", Network: "network", Pseudo: "pseudo", Class(9): "unknown"} {
		if c.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(c), c.String(), want)
		}
	}
}
