package mounts

import "testing"

func TestClassifyType(t *testing.T) {
	network := []string{"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "ceph", "glusterfs",
		"fuse.sshfs", "davfs", "9p", "lustre", "gpfs", "fuse.gvfsd-fuse", "fuse.s3fs", "webdav", "CIFS"}
	pseudo := []string{"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
		"securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc",
		"efivarfs", "selinuxfs", "rpc_pipefs", "nsfs", "autofs", "devfs", "fuse.lxcfs"}
	local := []string{"ext4", "xfs", "btrfs", "zfs", "tmpfs", "overlay", "vfat", "apfs", "hfs", "ntfs3",
		"fuse", "fuseblk", "squashfs", "nullfs", "ramfs", "", "fuse.portal"}
	for _, n := range network {
		if got := ClassifyType(n); got != Network {
			t.Errorf("ClassifyType(%q) = %v, want network", n, got)
		}
	}
	for _, n := range pseudo {
		if got := ClassifyType(n); got != Pseudo {
			t.Errorf("ClassifyType(%q) = %v, want pseudo", n, got)
		}
	}
	for _, n := range local {
		if got := ClassifyType(n); got != Local {
			t.Errorf("ClassifyType(%q) = %v, want local", n, got)
		}
	}
}

func TestClassifyMountFUSE(t *testing.T) {
	tests := []struct {
		name, fstype, source string
		remote               bool
		want                 Class
	}{
		// From published `mount` lines (source, type, and whether "local" was among
		// the flags). SeaweedFS's wiki: "weed@osxfuse0 on ... (osxfuse, local, ...)",
		// a network filesystem flagged local.
		{"seaweedfs flagged local", "osxfuse", "weed@osxfuse0", false, Network},
		// Alluxio/alluxio docs: "java@macfuse0 on <mount_point> (macfuse, nodev, ...)".
		{"alluxio", "macfuse", "java@macfuse0", true, Network},
		// A JuiceFS tutorial: "JuiceFS:alicloud on /Users/voidint/jfs (macfuse, ...)".
		{"juicefs", "macfuse", "JuiceFS:alicloud", true, Network},
		// sshfs notes: "user@host:/remotefolder/ on /localfolder (osxfuse, synchronous)".
		{"sshfs", "osxfuse", "user@host:/remotefolder/", true, Network},
		// Constructed, as issue 32 describes them.
		{"sshfs -o local", "macfuse", "me@build01:/srv", false, Network},
		{"macfuse disk image", "macfuse", "/dev/disk4s1", true, Local},
		{"macfuse disk image flagged local", "macfuse", "/dev/disk4s1", false, Local},
		{"image file as source", "macfuse", "/Users/me/images/ext4.img", true, Local},
		{"url source", "macfuse", "https://dav.example.com/files", false, Network},
		{"smb-style source", "osxfusefs", "//server/share", false, Network},
		{"bindfs default name", "osxfuse", "bindfs@osxfuse0", false, Network},
		{"empty source", "macfuse", "", false, Network},
		{"path with colon is local", "macfuse", "/Volumes/a:b", true, Local},
		// Linux keeps its subtype rules.
		{"linux sshfs", "fuse.sshfs", "me@host:/srv", false, Network},
		{"linux lxcfs", "fuse.lxcfs", "lxcfs", false, Pseudo},
		{"linux portal", "fuse.portal", "portal", false, Local},
		{"linux unknown daemon, remote source", "fuse.mystery", "host:/x", false, Network},
		{"linux bare fuse, remote source", "fuse", "sshfs#me@host:/x", false, Network},
		{"linux fuseblk", "fuseblk", "/dev/sdb1", false, Local},
		// Not FUSE: the flag still decides.
		{"apfs", "apfs", "/dev/disk3s1", false, Local},
		{"apfs not local", "apfs", "/dev/disk3s1", true, Network},
		{"smbfs", "smbfs", "//me@nas/share", false, Network},
		{"autofs", "autofs", "map auto_home", true, Pseudo},
	}
	for _, tt := range tests {
		if got := ClassifyMount(tt.fstype, tt.source, tt.remote); got != tt.want {
			t.Errorf("%s: ClassifyMount(%q, %q, %v) = %v, want %v", tt.name, tt.fstype, tt.source, tt.remote, got, tt.want)
		}
		m := Mount{FSType: tt.fstype, Source: tt.source, Remote: tt.remote}
		if got := m.Class(); got != tt.want {
			t.Errorf("%s: Mount.Class() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTypeListsDisjoint(t *testing.T) {
	for _, n := range NetworkTypes() {
		if _, ok := pseudoTypes[n]; ok {
			t.Errorf("%q is on both lists", n)
		}
	}
	if len(NetworkTypes()) != len(networkTypes) || len(PseudoTypes()) != len(pseudoTypes) {
		t.Error("list accessors lost names")
	}
}

func TestClassifyMagic(t *testing.T) {
	tests := []struct {
		magic uint32
		want  Class
	}{
		{0x6969, Network},     // NFS
		{0xff534d42, Network}, // CIFS
		{0xfe534d42, Network}, // SMB2
		{0x01021997, Network}, // v9fs
		{0x9fa0, Pseudo},      // proc
		{0x62656572, Pseudo},  // sysfs
		{0x63677270, Pseudo},  // cgroup2
		{0x0187, Pseudo},      // autofs
		{0xef53, Local},       // ext4
		{0x01021994, Local},   // tmpfs (devtmpfs says the same)
		{0x65735546, Local},   // generic fuse
		{0x58465342, Local},   // xfs
	}
	for _, tt := range tests {
		if got := ClassifyMagic(tt.magic); got != tt.want {
			t.Errorf("ClassifyMagic(%#x) = %v, want %v", tt.magic, got, tt.want)
		}
	}
}
