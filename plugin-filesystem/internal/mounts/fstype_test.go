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
